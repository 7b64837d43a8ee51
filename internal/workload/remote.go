package workload

import (
	"fmt"
	"io"
	"net"
	"time"

	"tlab/internal/dns"
	"tlab/internal/proto"
)

// Serving is implemented by Hosts that start a role's servers themselves:
// a role on another machine (a tlab agent across a real path) has its
// servers asked of that machine. Hosts without it start every server in
// this process, in the role's network (StartServerIn). Either way a
// workload asks for a server in one way (serve), whatever plays the role.
// It extends Hosts as net/http's optional interfaces extend a
// ResponseWriter.
type Serving interface {
	Serve(role, kind string, r ServerRequest) (io.Closer, error)
}

// RemoteRoles is implemented by Hosts some of whose roles are another
// machine, for what a workload does differently beyond starting servers
// (where a frame server's arrivals are read, whom a pacer follows).
type RemoteRoles interface {
	// IsRemote tells whether role runs on the other machine.
	IsRemote(role string) bool
}

// ServerRequest is a server a workload asks of a role's host.
type ServerRequest struct {
	// Protocol is the stack whose server it is (nil for the name server).
	Protocol *proto.Stack
	Port     int
	Settings proto.Settings
	// Broker is the broker's kind (ServerBroker; "" the embedded one).
	Broker string
	// Names are the name server's answers (ServerDNS).
	Names map[string]net.IP
}

// ServerKind is a kind of server a workload starts: how this process
// starts one in a network. Kinds register themselves (RegisterServer).
type ServerKind struct {
	Name  string
	Start func(n proto.Net, r ServerRequest) (io.Closer, error)
}

// serverKinds are the registered kinds, filled by init and read only
// after.
var serverKinds = map[string]ServerKind{}

// RegisterServer adds a kind of server; it panics on a kind registered
// twice.
func RegisterServer(k ServerKind) {
	if _, dup := serverKinds[k.Name]; dup {
		panic("workload: server kind " + k.Name + " registered twice")
	}
	serverKinds[k.Name] = k
}

// StartServerIn starts a server of kind in this process, in network n.
func StartServerIn(n proto.Net, kind string, r ServerRequest) (io.Closer, error) {
	k, ok := serverKinds[kind]
	if !ok {
		return nil, fmt.Errorf("no server of kind %q", kind)
	}
	return k.Start(n, r)
}

// serve starts a server of kind on the host playing role: the one path
// every workload takes, whatever machine plays the role.
func serve(env *Env, role, kind string, r ServerRequest) (io.Closer, error) {
	if s, ok := env.Hosts.(Serving); ok {
		return s.Serve(role, kind, r)
	}
	return StartServerIn(env.Hosts.Net(role), kind, r)
}

func init() {
	RegisterServer(ServerKind{Name: ServerRequestResponse, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		ex, ok := proto.As[proto.Exchanger](r.Protocol)
		if !ok {
			return nil, proto.Require(r.Protocol.Name, proto.CapRequestResponse)
		}
		return ex.Serve(n, r.Port, r.Settings)
	}})
	RegisterServer(ServerKind{Name: ServerBroker, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		ps, ok := proto.As[proto.PubSub](r.Protocol)
		if !ok {
			return nil, proto.Require(r.Protocol.Name, proto.CapPubSub)
		}
		return ps.StartBroker(n, r.Port, r.Settings, r.Broker)
	}})
	RegisterServer(ServerKind{Name: ServerDNS, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		return dns.Serve(n, r.Names)
	}})
}

// RemoteFrames is implemented by Hosts that can also run a frame server on
// the other machine and give back what it saw, on this machine's clock.
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

// remote tells whether role runs on another machine.
func remote(env *Env, role string) bool {
	rr, ok := env.Hosts.(RemoteRoles)
	return ok && rr.IsRemote(role)
}

// serveBroker starts the protocol's broker on the host playing role.
func serveBroker(env *Env, role string, port int, kind string) (io.Closer, error) {
	return serve(env, role, ServerBroker, ServerRequest{Protocol: env.Protocol, Port: port, Settings: env.Settings, Broker: kind})
}

// serveNames starts study B's name server on the host playing role,
// answering the server's name with ip.
func serveNames(env *Env, role string, ip net.IP) (io.Closer, error) {
	return serve(env, role, ServerDNS, ServerRequest{Port: dns.Port, Settings: env.Settings, Names: map[string]net.IP{proto.ServerName: ip}})
}
