package proto

import (
	"context"
	"io"
	"time"
)

// Exchanger is the request/response capability (CapRequestResponse): a
// server and a client that exchange requests and responses of chosen sizes.
type Exchanger interface {
	// Serve starts a server in host n on port; it runs until closed.
	Serve(n Net, port int, s Settings) (io.Closer, error)
	// NewClient makes a client in host n for the server at addr
	// ("ip:port"). It may connect at once or on the first exchange.
	NewClient(ctx context.Context, n Net, addr string, s Settings) (Client, error)
}

// Client performs exchanges: one request, one whole response.
type Client interface {
	// Exchange sends a request of reqSize payload bytes that asks for
	// respSize payload bytes back, and returns once the whole response has
	// arrived.
	Exchange(ctx context.Context, reqSize, respSize int) (Exchange, error)
	// Multiplexes tells whether exchanges may overlap. A client that does
	// not multiplex must be given one exchange at a time.
	Multiplexes() bool
	// Connections is the number of transport connections opened so far.
	Connections() int
	Close() error
}

// Exchange is what a client observed of one request.
type Exchange struct {
	// Start is when Exchange was called; FirstByte when the first byte
	// of the response arrived; Done when the last did.
	Start, FirstByte, Done time.Time
	// ConnID numbers the connection that carried the exchange (1, 2, ...).
	ConnID int
	// NewConn is set when the exchange had to open its connection; then
	// Connect (transport handshake: TCP) and Handshake (TLS or QUIC) say
	// how long that took.
	NewConn   bool
	Connect   time.Duration
	Handshake time.Duration
	// Resumed tells whether a new TLS or QUIC connection resumed a
	// session; EarlyData whether it sent 0-RTT data.
	Resumed   bool
	EarlyData bool
	// RespBytes counts the response payload received.
	RespBytes int
}
