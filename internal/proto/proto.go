// Package proto holds tlab's protocol endpoints: real stacks (the Go
// standard library's TCP, crypto/tls and net/http, quic-go and its http3)
// wrapped as small pairs of a server and a client that exchange requests
// and responses of chosen sizes.
//
// Each protocol lives in a file of its own and registers itself; adding one
// means adding one file.
package proto

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"time"
)

// Net opens sockets inside one host. It is the seam between protocols and
// the testbed: *testbed.Host implements it.
type Net interface {
	ListenWith(lc *net.ListenConfig, network, addr string) (net.Listener, error)
	ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error)
	DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error)
}

// Protocol is a request/response protocol stack.
type Protocol interface {
	// Name is the protocol's short name ("tcp", "h3", ...).
	Name() string
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

// constructors holds every protocol, registered by its own file at init,
// and options the settings (by yaml name) each honours.
var (
	constructors = map[string]func() Protocol{}
	options      = map[string][]string{}
)

// register adds a protocol with the settings it honours. An option that
// is not a setting is a programming error.
func register(name string, f func() Protocol, opts ...string) {
	known := SettingNames()
	for _, o := range opts {
		if !slices.Contains(known, o) {
			panic("proto: " + name + " declares unknown option " + o)
		}
	}
	constructors[name], options[name] = f, opts
}

// Options returns the settings the named protocol honours.
func Options(name string) []string { return slices.Clone(options[name]) }

// Names lists the registered protocols, sorted.
func Names() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the named protocol.
func Lookup(name string) (Protocol, error) {
	f, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown protocol %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return f(), nil
}

// MaxMessage is the largest request or response payload tlab's framing
// carries (and its servers accept): 64 MiB. A workload must refuse larger
// sizes when it is configured, not fail every exchange at run time.
const MaxMessage = 64 << 20
