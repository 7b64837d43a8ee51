package proto

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"time"
)

func init() {
	register("tls", func() Protocol { return tlsProto{} }, "tls_version", "key_exchange", "resumption", "tcp_congestion")
}

// tlsProto is TLS (1.3 by default, 1.2 selectable) over TCP with
// length-prefixed messages: one persistent connection, one exchange at a
// time.
type tlsProto struct{}

const alpnTLab = "tlab"

func (tlsProto) Name() string { return "tls" }

func (tlsProto) Serve(n Net, port int, s Settings) (io.Closer, error) {
	ln, err := listenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	cfg := s.serverTLS(alpnTLab)
	return startAcceptLoop(ln, func(c net.Conn) error { return serveStream(tls.Server(c, cfg)) }), nil
}

func (tlsProto) NewClient(ctx context.Context, n Net, addr string, s Settings) (Client, error) {
	raw, connect, err := dialTCP(ctx, n, addr, s)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, s.clientTLS(alpnTLab))
	t0 := time.Now()
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	setup := Exchange{Connect: connect, Handshake: time.Since(t0), Resumed: c.ConnectionState().DidResume}
	return &streamClient{stream: c, closer: c, setup: setup}, nil
}
