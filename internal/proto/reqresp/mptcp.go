package reqresp

import (
	"context"
	"io"
	"net"
	"strconv"
	"time"

	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "mptcp", Doc: "Multipath TCP (the kernel's, through Go's SetMultipathTCP), length-prefixed messages, no TLS; one exchange at a time; a subflow on each of a multi-homed client's links", Options: []string{"tcp_congestion", "tcp_ecn"}, Impl: mptcpProto{}})
}

// mptcpProto is tcp over Multipath TCP: the client asks the kernel for an
// MPTCP socket, whose in-kernel path manager opens a subflow from every
// endpoint of the client's namespace (a multi-homed testbed host has one
// per link: testbed/multihome_linux.go), and the server accepts MPTCP.
// Where either end's kernel refuses MPTCP, Go falls back to plain TCP, as
// the kernel does with a peer that does not answer MPTCP's options.
type mptcpProto struct{}

func (mptcpProto) Name() string { return "mptcp" }

func (mptcpProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	lc := &net.ListenConfig{Control: s.Control}
	lc.SetMultipathTCP(true)
	ln, err := n.ListenWith(lc, "tcp4", ":"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return proto.StartAcceptLoop(ln, func(c net.Conn) error { return serveStream(c) }), nil
}

func (mptcpProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	d := &net.Dialer{Control: s.Control}
	d.SetMultipathTCP(true)
	t0 := time.Now()
	c, err := n.DialContext(ctx, d, "tcp4", addr)
	if err != nil {
		return nil, err
	}
	connect := time.Since(t0)
	s.TCP.Observe(c)
	return &streamClient{stream: c, closer: c, setup: proto.Exchange{Connect: connect}}, nil
}

// UsesMultipath tells whether c is an MPTCP connection (false after a
// fallback to TCP), for tests and checks.
func UsesMultipath(c proto.Client) bool {
	sc, ok := c.(*streamClient)
	if !ok {
		return false
	}
	tc, ok := sc.stream.(*net.TCPConn)
	if !ok {
		return false
	}
	mp, err := tc.MultipathTCP()
	return err == nil && mp
}
