package reqresp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "h1", Doc: "HTTP/1.1 in clear (net/http's wire format); more exchanges open more connections", Options: []string{"tcp_congestion", "tcp_ecn", "idle_timeout", "h1_client", "h1_max_idle"}, Impl: h1Proto{}})
	proto.Register(proto.Registration{Name: "h1s", Doc: "HTTP/1.1 over TLS; more exchanges open more connections", Options: []string{"tls_version", "key_exchange", "resumption", "tcp_congestion", "tcp_ecn", "idle_timeout", "h1_client", "h1_max_idle"}, Impl: h1Proto{tls: true}})
}

// h1Proto is HTTP/1.1 in clear (h1) or over TLS (h1s). Requests and
// responses are written and parsed by net/http (Request.Write,
// http.ReadResponse); the client manages its connections itself, as study
// A's client does: a request takes the idle persistent connection if there
// is one and otherwise opens a new connection (new TCP and TLS handshakes,
// which the request waits for). It keeps at most MaxIdle idle connections
// (one by default: the study's one persistent connection), closing the one
// idle longest when another comes back, and closes any left idle for
// IdleTimeout. That is settings.h1_client "strict". With "transport" the
// client is net/http's own Transport with its defaults instead (two idle
// connections per host; a request that finds none dials and takes
// whichever comes first, the new connection or a busy one becoming free),
// as a Go program that does not tune it has it.
type h1Proto struct{ tls bool }

func (p h1Proto) Name() string {
	if p.tls {
		return "h1s"
	}
	return "h1"
}

func (p h1Proto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	return httpProto{name: p.Name(), tls: p.tls}.Serve(n, port, s)
}

func (p h1Proto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	if s.H1Client == proto.H1Transport {
		return newTransportClient(httpProto{name: p.Name(), tls: p.tls}, n, addr, s, 0)
	}
	scheme := "http"
	if p.tls {
		scheme = "https"
	}
	c := &h1Client{n: n, addr: addr, url: scheme + "://" + addr + "/exchange", settings: s, idleTimeout: s.IdleTimeout.D(), maxIdle: max(s.MaxIdle, 1)}
	if p.tls {
		c.tlsConf = s.ClientTLS("http/1.1")
	}
	return c, nil
}

type h1Conn struct {
	id   int
	conn net.Conn
	br   *bufio.Reader
	idle *time.Timer
}

type h1Client struct {
	n           proto.Net
	addr, url   string
	settings    proto.Settings
	tlsConf     *tls.Config
	idleTimeout time.Duration
	maxIdle     int

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	all    map[*h1Conn]bool
	dials  atomic.Int64
	closed bool
}

func (c *h1Client) Multiplexes() bool { return true }
func (c *h1Client) Connections() int  { return int(c.dials.Load()) }

func (c *h1Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for hc := range c.all {
		hc.conn.Close()
	}
	c.idle, c.all = nil, nil
	return nil
}

// take returns the most recently used idle connection, or nil.
func (c *h1Client) take() *h1Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.idle) > 0 {
		hc := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if hc.idle.Stop() {
			return hc
		}
		// Its idle timer fired and is closing it: look further.
	}
	return nil
}

// put returns a connection to the idle set; it is closed if it stays idle
// for the idle timeout.
func (c *h1Client) put(hc *h1Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		hc.conn.Close()
		return
	}
	hc.idle = time.AfterFunc(c.idleTimeout, func() { c.expire(hc) })
	c.idle = append(c.idle, hc)
	for len(c.idle) > c.maxIdle {
		oldest := c.idle[0]
		c.idle = c.idle[1:]
		if oldest.idle.Stop() {
			delete(c.all, oldest)
			oldest.conn.Close()
		}
	}
}

func (c *h1Client) expire(hc *h1Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.idle {
		if x == hc {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			break
		}
	}
	delete(c.all, hc)
	hc.conn.Close()
}

func (c *h1Client) discard(hc *h1Conn) {
	c.mu.Lock()
	delete(c.all, hc)
	c.mu.Unlock()
	hc.conn.Close()
}

// dial opens a connection and reports its handshakes into ex.
func (c *h1Client) dial(ctx context.Context, ex *proto.Exchange) (*h1Conn, error) {
	raw, connect, err := proto.DialTCP(ctx, c.n, c.addr, c.settings)
	if err != nil {
		return nil, err
	}
	ex.NewConn, ex.Connect = true, connect
	conn := raw
	if c.tlsConf != nil {
		tc := tls.Client(raw, c.tlsConf)
		t0 := time.Now()
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		ex.Handshake, ex.Resumed = time.Since(t0), tc.ConnectionState().DidResume
		conn = tc
	}
	hc := &h1Conn{id: int(c.dials.Add(1)), conn: conn, br: bufio.NewReader(conn)}
	c.mu.Lock()
	if c.all == nil {
		c.all = map[*h1Conn]bool{}
	}
	c.all[hc] = true
	c.mu.Unlock()
	return hc, nil
}

func (c *h1Client) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	ex := proto.Exchange{Start: time.Now()}
	hc := c.take()
	if hc == nil {
		var err error
		if hc, err = c.dial(ctx, &ex); err != nil {
			return ex, err
		}
	}
	ex.ConnID = hc.id
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(make([]byte, reqSize)))
	if err != nil {
		c.put(hc)
		return ex, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(responseSizeHeader, strconv.Itoa(respSize))
	if d, ok := ctx.Deadline(); ok {
		hc.conn.SetDeadline(d)
	}
	// One buffered write, so that a small request leaves as one segment.
	bw := bufio.NewWriterSize(hc.conn, 4096+reqSize)
	if err := req.Write(bw); err != nil {
		c.discard(hc)
		return ex, err
	}
	if err := bw.Flush(); err != nil {
		c.discard(hc)
		return ex, err
	}
	if _, err := hc.br.Peek(1); err != nil {
		c.discard(hc)
		return ex, err
	}
	ex.FirstByte = time.Now()
	resp, err := http.ReadResponse(hc.br, req)
	if err != nil {
		c.discard(hc)
		return ex, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ex.Done, ex.RespBytes = time.Now(), int(n)
	hc.conn.SetDeadline(time.Time{})
	switch {
	case err != nil:
		c.discard(hc)
		return ex, err
	case resp.StatusCode != http.StatusOK:
		c.discard(hc)
		return ex, fmt.Errorf("HTTP %s", resp.Status)
	case resp.Close:
		c.discard(hc)
	default:
		c.put(hc)
	}
	return ex, nil
}
