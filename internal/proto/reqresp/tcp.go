package reqresp

import (
	"context"
	"io"
	"net"
	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "tcp", Doc: "TCP, length-prefixed messages, no TLS; one exchange at a time", Options: []string{"tcp_congestion", "tcp_ecn"}, Impl: tcpProto{}})
}

// tcpProto is plain TCP with length-prefixed messages and no TLS: one
// persistent connection, one exchange at a time.
type tcpProto struct{}

func (tcpProto) Name() string { return "tcp" }

func (tcpProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	ln, err := proto.ListenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	return proto.StartAcceptLoop(ln, func(c net.Conn) error { return serveStream(c) }), nil
}

func (tcpProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	c, connect, err := proto.DialTCP(ctx, n, addr, s)
	if err != nil {
		return nil, err
	}
	return &streamClient{stream: c, closer: c, setup: proto.Exchange{Connect: connect}}, nil
}
