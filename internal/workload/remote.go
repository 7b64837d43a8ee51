package workload

import (
	"fmt"
	"io"
	"net"
	"time"

	"tlab/internal/dns"
	"tlab/internal/proto"
)

// RemoteServers is implemented by Hosts some of whose roles are another
// machine (a tlab agent across a real path): a server for such a role is
// asked of that machine instead of started in this process. It extends
// Hosts as net/http's optional interfaces extend a ResponseWriter.
type RemoteServers interface {
	// IsRemote tells whether role runs on the other machine.
	IsRemote(role string) bool
	// Serve starts on role's machine a server of kind (ServerKind...) for
	// the protocol, on port, with the run's settings and certificate.
	Serve(role, kind, protocol string, port int, s proto.Settings) (io.Closer, error)
}

// RemoteFrames is a RemoteServers that can also run a frame server on the
// other machine and give back what it saw, on this machine's clock.
type RemoteFrames interface {
	ServeFrames(role string, port int, s proto.Settings, o proto.FrameOptions, resultSize int, processing time.Duration) (RemoteFrameServer, error)
}

// RemoteFrameServer is a frame server on another machine.
type RemoteFrameServer interface {
	io.Closer
	// Arrivals returns every frame the server saw, times on this
	// machine's clock (the other's, corrected by its measured offset).
	Arrivals() ([]proto.FrameArrival, error)
	// UncertaintyMs is how far those times may be off: half the smallest
	// round trip over which the offset was measured.
	UncertaintyMs() float64
}

// The kinds of server a workload starts.
const (
	ServerRequestResponse = "request-response" // the protocol's Exchanger server
	ServerBroker          = "broker"           // the protocol's PubSub broker
	ServerDNS             = "dns"              // study B's name server
)

// remote returns the Hosts' RemoteServers when role is remote.
func remote(env *Env, role string) (RemoteServers, bool) {
	rs, ok := env.Hosts.(RemoteServers)
	if ok && rs.IsRemote(role) {
		return rs, true
	}
	return nil, false
}

// serveBroker starts the protocol's broker on the host playing role.
func serveBroker(env *Env, ps proto.PubSub, role string, port int, kind string) (io.Closer, error) {
	if rs, ok := remote(env, role); ok {
		if kind != "" && kind != proto.BrokerEmbedded {
			return nil, fmt.Errorf("broker %s: across a real path the agent runs the embedded broker only", kind)
		}
		return rs.Serve(role, ServerBroker, env.Protocol.Name, port, env.Settings)
	}
	return ps.StartBroker(env.Hosts.Net(role), port, env.Settings, kind)
}

// serveNames starts study B's name server on the host playing role,
// answering the server's name with ip.
func serveNames(env *Env, role string, ip net.IP) (io.Closer, error) {
	if rs, ok := remote(env, role); ok {
		return rs.Serve(role, ServerDNS, "", dns.Port, env.Settings)
	}
	return dns.Serve(env.Hosts.Net(role), map[string]net.IP{proto.ServerName: ip})
}
