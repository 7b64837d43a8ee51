package reqresp

import "tlab/internal/proto"

// h2c is HTTP/2 without TLS, with prior knowledge (RFC 9113, section
// 3.3): net/http at both ends, every request multiplexed on one TCP
// connection, so that HTTP/2's framing can be told apart from TLS's cost.
func init() {
	proto.Register(proto.Registration{
		Name:    "h2c",
		Doc:     "HTTP/2 in clear with prior knowledge (net/http), one connection; multiplexes",
		Options: []string{"tcp_congestion", "tcp_ecn", "idle_timeout"},
		Impl:    httpProto{name: "h2c", h2: true},
	})
}
