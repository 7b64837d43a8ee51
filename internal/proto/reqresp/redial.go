package reqresp

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "tcp-redial", Doc: "tcp that opens a new connection after an exchange fails (a timeout: a connection whose address's link went away); one exchange at a time", Options: []string{"tcp_congestion", "tcp_ecn"}, Impl: redialProto{name: "tcp-redial", inner: tcpProto{}}})
	proto.Register(proto.Registration{Name: "quic-redial", Doc: "quic that opens a new connection after an exchange fails; one exchange at a time", Options: []string{"key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: redialProto{name: "quic-redial", inner: quicProto{perRequest: false}}})
}

// stackOfOne is a stack whose client runs one exchange at a time.
type stackOfOne interface {
	Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error)
	NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error)
}

// redialProto is a stack whose client, when an exchange fails, drops its
// connection and opens a new one for the next exchange: what an
// application does when the network under it changed (a handover took
// the link of its address away; the new connection takes the route in
// force). The exchange that failed is lost; the next one pays the new
// connection's handshakes.
type redialProto struct {
	name  string
	inner stackOfOne
}

func (r redialProto) Name() string { return r.name }

func (r redialProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	return r.inner.Serve(n, port, s)
}

func (r redialProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	c, err := r.inner.NewClient(ctx, n, addr, s)
	if err != nil {
		return nil, err
	}
	return &redialClient{dial: func(ctx context.Context) (proto.Client, error) { return r.inner.NewClient(ctx, n, addr, s) }, cur: c}, nil
}

// redialClient runs exchanges over its current connection and replaces
// it after a failure.
type redialClient struct {
	dial func(context.Context) (proto.Client, error)
	mu   sync.Mutex
	cur  proto.Client // nil after a failure, until the next exchange
	// before counts the connections of the clients replaced so far.
	before int
}

func (c *redialClient) Multiplexes() bool { return false }

func (c *redialClient) Connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return c.before
	}
	return c.before + c.cur.Connections()
}

func (c *redialClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return nil
	}
	err := c.cur.Close()
	c.before += c.cur.Connections()
	c.cur = nil
	return err
}

func (c *redialClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	if c.cur == nil {
		cur, err := c.dial(ctx)
		if err != nil {
			// The dial's time is the exchange's: it opened no
			// connection to number.
			return proto.Exchange{Start: start, ConnID: c.before + 1, NewConn: true}, proto.OrCanceled(ctx, errors.Join(errors.New("redial"), err))
		}
		c.cur = cur
	}
	ex, err := c.cur.Exchange(ctx, reqSize, respSize)
	ex.Start = start // a redial above is part of the exchange
	ex.ConnID += c.before
	if err != nil {
		c.cur.Close()
		c.before += c.cur.Connections()
		c.cur = nil
	}
	return ex, err
}
