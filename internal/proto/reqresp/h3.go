package reqresp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

func init() {
	proto.Register(proto.Registration{Name: "h3", Doc: "HTTP/3 (quic-go's http3), one connection, a stream per request; multiplexes", Options: []string{"key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: h3Proto{}})
}

// h3Proto is HTTP/3 with quic-go's http3 at both ends: one QUIC connection,
// one client-initiated bidirectional stream per request.
type h3Proto struct{}

func (h3Proto) Name() string { return "h3" }

type h3Server struct {
	srv   *http3.Server
	udp   *net.UDPConn
	done  chan error
	qlogs *proto.QlogFiles
}

func (h3Proto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	qc, qlogs := proto.QUICConfig(s)
	srv := &http3.Server{
		Handler:    http.HandlerFunc(payloadHandler),
		TLSConfig:  http3.ConfigureTLSConfig(proto.QUICTLS(s.ServerTLS())),
		QUICConfig: qc,
		Logger:     slog.New(slog.NewTextHandler(serverLog(s), nil)),
	}
	h := &h3Server{srv: srv, udp: udp, done: make(chan error, 1), qlogs: qlogs}
	go func() { h.done <- srv.Serve(udp) }()
	return h, nil
}

func (h *h3Server) Close() error {
	err := h.srv.Close()
	h.udp.Close()
	if serr := <-h.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && !errors.Is(serr, quic.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	h.qlogs.Wait()
	return err
}

// h3Client dials through the host's namespace and numbers its connections.
type h3Client struct {
	url       string
	transport *http3.Transport
	client    *http.Client
	dials     atomic.Int64
	// claimed is the last connection whose set-up an exchange reported.
	claimed atomic.Int64
	mu      sync.Mutex
	udps    []*net.UDPConn
	setup   map[int64]proto.Exchange
	qlogs   *proto.QlogFiles
}

func (h3Proto) NewClient(_ context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	qc, qlogs := proto.QUICConfig(s)
	c := &h3Client{url: "https://" + addr + "/exchange", setup: map[int64]proto.Exchange{}, qlogs: qlogs}
	c.transport = &http3.Transport{
		TLSClientConfig: proto.QUICTLS(s.ClientTLS(http3.NextProtoH3)),
		QUICConfig:      qc,
		Dial: func(ctx context.Context, a string, tlsCfg *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			t0 := time.Now()
			conn, udp, err := proto.DialQUIC(ctx, n, a, tlsCfg, qc, s.ZeroRTT)
			if err != nil {
				return nil, err
			}
			id := c.dials.Add(1)
			st := conn.ConnectionState()
			c.mu.Lock()
			c.udps = append(c.udps, udp)
			c.setup[id] = proto.Exchange{Handshake: time.Since(t0), Resumed: st.TLS.DidResume, EarlyData: st.Used0RTT}
			c.mu.Unlock()
			return conn, nil
		},
	}
	c.client = &http.Client{Transport: c.transport}
	return c, nil
}

func (c *h3Client) Multiplexes() bool { return true }
func (c *h3Client) Connections() int  { return int(c.dials.Load()) }

func (c *h3Client) Close() error {
	err := c.transport.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.udps {
		u.Close()
	}
	c.qlogs.Wait()
	return err
}

func (c *h3Client) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	ex := proto.Exchange{Start: time.Now()}
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { ex.FirstByte = time.Now() }}
	n, err := post(httptrace.WithClientTrace(ctx, trace), c.client, c.url, reqSize, respSize)
	ex.Done, ex.RespBytes = time.Now(), n
	if ex.FirstByte.IsZero() {
		// http3 does not call every httptrace hook: the headers have
		// arrived when Do returns.
		ex.FirstByte = ex.Done
	}
	id := c.dials.Load()
	ex.ConnID = int(id)
	// The first exchange to finish on a new connection reports its set-up.
	if prev := c.claimed.Load(); prev < id && c.claimed.CompareAndSwap(prev, id) {
		c.mu.Lock()
		s := c.setup[id]
		c.mu.Unlock()
		ex.NewConn, ex.Handshake, ex.Resumed, ex.EarlyData = true, s.Handshake, s.Resumed, s.EarlyData
	}
	return ex, err
}

// serverLog is where a server's library logs: the settings' ServerLog,
// or nowhere.
func serverLog(s proto.Settings) io.Writer {
	if s.ServerLog == nil {
		return io.Discard
	}
	return s.ServerLog
}
