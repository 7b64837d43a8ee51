package reqresp

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"time"
	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "tls", Doc: "TLS 1.3 (or 1.2) over TCP, the same messages; one exchange at a time", Options: []string{"tls_version", "key_exchange", "resumption", "tcp_congestion", "tcp_ecn"}, Impl: tlsProto{}})
}

// tlsProto is TLS (1.3 by default, 1.2 selectable) over TCP with
// length-prefixed messages: one persistent connection, one exchange at a
// time.
type tlsProto struct{}

const alpnTLab = "tlab"

func (tlsProto) Name() string { return "tls" }

func (tlsProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	ln, err := proto.ListenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	cfg := s.ServerTLS(alpnTLab)
	return proto.StartAcceptLoop(ln, func(c net.Conn) error { return serveStream(tls.Server(c, cfg)) }), nil
}

func (tlsProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	raw, connect, err := proto.DialTCP(ctx, n, addr, s)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, s.ClientTLS(alpnTLab))
	t0 := time.Now()
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	setup := proto.Exchange{Connect: connect, Handshake: time.Since(t0), Resumed: c.ConnectionState().DidResume}
	return &streamClient{stream: c, closer: c, setup: setup}, nil
}
