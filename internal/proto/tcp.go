package proto

import (
	"context"
	"io"
	"net"
)

func init() { register("tcp", func() Protocol { return tcpProto{} }, "tcp_congestion") }

// tcpProto is plain TCP with length-prefixed messages and no TLS: one
// persistent connection, one exchange at a time.
type tcpProto struct{}

func (tcpProto) Name() string { return "tcp" }

func (tcpProto) Serve(n Net, port int, s Settings) (io.Closer, error) {
	ln, err := listenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	return startAcceptLoop(ln, func(c net.Conn) error { return serveStream(c) }), nil
}

func (tcpProto) NewClient(ctx context.Context, n Net, addr string, s Settings) (Client, error) {
	c, connect, err := dialTCP(ctx, n, addr, s)
	if err != nil {
		return nil, err
	}
	return &streamClient{stream: c, closer: c, setup: Exchange{Connect: connect}}, nil
}
