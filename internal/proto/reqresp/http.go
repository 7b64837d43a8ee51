package reqresp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "h2", Doc: "HTTP/2 over TLS (net/http), one connection; multiplexes", Options: []string{"tls_version", "key_exchange", "resumption", "tcp_congestion", "tcp_ecn", "idle_timeout"}, Impl: httpProto{name: "h2", tls: true, h2: true}})
}

// responseSizeHeader asks the server for a response body of that many bytes.
const responseSizeHeader = "Tlab-Response-Size"

// httpProto is HTTP over TCP with net/http at both ends. Its server serves
// HTTP/1.1 in clear or over TLS (for h1 and h1s, whose client is in h1.go)
// and HTTP/2 over TLS; its client is the h2 client, which multiplexes every
// request on one connection. A request is a POST whose body is the payload.
type httpProto struct {
	name string
	tls  bool
	h2   bool
}

func (p httpProto) Name() string { return p.name }

func (p httpProto) protocols() *http.Protocols {
	var ps http.Protocols
	ps.SetHTTP1(!p.h2)
	ps.SetHTTP2(p.h2 && p.tls)
	ps.SetUnencryptedHTTP2(p.h2 && !p.tls) // h2c: HTTP/2 with prior knowledge
	return &ps
}

func (p httpProto) alpn() string {
	if p.h2 {
		return "h2"
	}
	return "http/1.1"
}

// post sends a POST with a reqSize-byte body asking for respSize bytes and
// reads the whole response body, returning its length.
func post(ctx context.Context, client *http.Client, url string, reqSize, respSize int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(make([]byte, reqSize)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(responseSizeHeader, strconv.Itoa(respSize))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %s", resp.Status)
	}
	return int(n), err
}

// payloadHandler answers a POST with the number of bytes it asks for.
func payloadHandler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	size, err := strconv.Atoi(r.Header.Get(responseSizeHeader))
	if err != nil || size < 0 || size > maxMessage {
		http.Error(w, "bad "+responseSizeHeader, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	bufp := payloadPool.Get().(*[]byte)
	defer payloadPool.Put(bufp)
	buf := *bufp
	clear(buf)
	for left := size; left > 0; {
		n := min(left, len(buf))
		if _, err := w.Write(buf[:n]); err != nil {
			return
		}
		left -= n
	}
}

type httpServer struct {
	srv  *http.Server
	done chan error
}

func (p httpProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	ln, err := proto.ListenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(payloadHandler), Protocols: p.protocols(), ReadHeaderTimeout: 30 * time.Second, ErrorLog: s.ErrorLog()}
	hs := &httpServer{srv: srv, done: make(chan error, 1)}
	if p.tls {
		srv.TLSConfig = s.ServerTLS(p.alpn())
		go func() { hs.done <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { hs.done <- srv.Serve(ln) }()
	}
	return hs, nil
}

func (h *httpServer) Close() error {
	err := h.srv.Close()
	if serr := <-h.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// httpClient tracks the connections its transport opens.
type httpClient struct {
	proto     httpProto
	url       string
	client    *http.Client
	transport *http.Transport
	dials     atomic.Int64
	mu        sync.Mutex
	connIDs   map[net.Conn]int
}

func (p httpProto) NewClient(_ context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	return newTransportClient(p, n, addr, s, 1)
}

// newTransportClient is a client on net/http's Transport, counting the
// connections it dials; idlePerHost is its MaxIdleConnsPerHost (0: net/http's
// default, http.DefaultMaxIdleConnsPerHost).
// transportIdleTimeout is how long the Transport keeps an idle
// connection. The HTTP/1.1 client "transport" is net/http's Transport as
// Go gives it, so its idle connections live net/http's 90 s
// (http.DefaultTransport's IdleConnTimeout), not settings.idle_timeout,
// which is the strict client's; HTTP/2 keeps its one connection for
// settings.idle_timeout.
func transportIdleTimeout(p httpProto, s proto.Settings) time.Duration {
	if !p.h2 {
		return http.DefaultTransport.(*http.Transport).IdleConnTimeout
	}
	return s.IdleTimeout.D()
}

func newTransportClient(p httpProto, n proto.Net, addr string, s proto.Settings, idlePerHost int) (*httpClient, error) {
	c := &httpClient{proto: p, connIDs: map[net.Conn]int{}}
	scheme := "http"
	if p.tls {
		scheme = "https"
	}
	c.url = scheme + "://" + addr + "/exchange"
	dialer := &net.Dialer{Control: s.Control}
	t := &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			conn, err := n.DialContext(ctx, dialer, "tcp4", a)
			if err == nil {
				c.dials.Add(1)
				s.TCP.Observe(conn)
			}
			return conn, err
		},
		Protocols:           p.protocols(),
		MaxIdleConnsPerHost: idlePerHost,
		IdleConnTimeout:     transportIdleTimeout(p, s),
		DisableCompression:  true,
		ForceAttemptHTTP2:   p.h2,
	}
	if p.tls {
		t.TLSClientConfig = s.ClientTLS(p.alpn())
	}
	if p.h2 {
		// One connection carries every request.
		t.MaxConnsPerHost = 1
	}
	c.transport = t
	c.client = &http.Client{Transport: t}
	return c, nil
}

func (c *httpClient) Multiplexes() bool { return true }
func (c *httpClient) Connections() int  { return int(c.dials.Load()) }

func (c *httpClient) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

func (c *httpClient) connID(conn net.Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.connIDs[conn]
	if !ok {
		id = len(c.connIDs) + 1
		c.connIDs[conn] = id
	}
	return id
}

func (c *httpClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	ex := proto.Exchange{Start: time.Now()}
	var connectStart, tlsStart time.Time
	trace := &httptrace.ClientTrace{
		ConnectStart: func(string, string) { connectStart = time.Now() },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				ex.Connect = time.Since(connectStart)
			}
		},
		TLSHandshakeStart: func() { tlsStart = time.Now() },
		TLSHandshakeDone: func(st tls.ConnectionState, err error) {
			if err == nil {
				ex.Handshake = time.Since(tlsStart)
				ex.Resumed = st.DidResume
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			ex.ConnID = c.connID(info.Conn)
			ex.NewConn = !info.Reused
		},
		GotFirstResponseByte: func() { ex.FirstByte = time.Now() },
	}
	n, err := post(httptrace.WithClientTrace(ctx, trace), c.client, c.url, reqSize, respSize)
	ex.Done, ex.RespBytes = time.Now(), n
	if err == nil && !ex.NewConn {
		// Only a new connection reports its handshakes.
		ex.Connect, ex.Handshake = 0, 0
	}
	return ex, err
}
