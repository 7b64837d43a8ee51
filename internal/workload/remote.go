package workload

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
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
	// Frames is a frame server's stream (ServerFrames).
	Frames *FrameRequest
}

// FrameRequest is what a frame server (ServerFrames) is asked for
// beyond a stack's server: the stream's options, the result it answers
// each whole frame with after Processing, and who hears its arrivals.
type FrameRequest struct {
	Options    proto.FrameOptions
	ResultSize int
	Processing time.Duration
	Sink       FrameSink
}

// FrameSink hears what a frame server saw, wherever it runs. First,
// how far its times may be off this machine's clock (ClockUncertainty:
// 0 for a server on this machine). Then a server in this process tells
// it each frame as the frame is whole or given up (Frame); a server on
// another machine, which cannot call back as it goes, tells it every
// frame at once when it is closed (Arrived), on this machine's clock.
type FrameSink interface {
	ClockUncertainty(ms float64)
	Frame(a proto.FrameArrival)
	Arrived(all []proto.FrameArrival)
}

// ServerKind is a kind of server a workload starts: how this process
// starts one in a network. Kinds register themselves (RegisterServer).
type ServerKind struct {
	Name  string
	Start func(n proto.Net, r ServerRequest) (io.Closer, error)
	// Here says the server reports to the workload as it runs (the frame
	// server's arrivals): on this machine it runs in this process, in the
	// role's network, also where the role's other servers run in a child
	// process (a CPU-limited host).
	Here bool
	// Agent says a tlab agent serves the kind for a role it plays:
	// everything Start reads of the request crosses its control channel
	// (the protocol by name, the port, the settings and certificate, one
	// name answered with the agent's address, a frame stream's options
	// and result, the embedded broker), each checked and bounded by the
	// agent, and a FrameSink's arrivals go back when the server is
	// closed. The agent serves these kinds from this registry.
	Agent bool
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

// AgentServes tells whether a tlab agent serves a kind of server
// (ServerKind.Agent).
func AgentServes(kind string) bool { return serverKinds[kind].Agent }

// AgentKinds are the kinds a tlab agent serves, sorted.
func AgentKinds() []string {
	var out []string
	for name, k := range serverKinds {
		if k.Agent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ServesHere tells whether a kind of server runs in this process
// wherever the role's host is on this machine (ServerKind.Here).
func ServesHere(kind string) bool { return serverKinds[kind].Here }

// StartServerIn starts a server of kind in this process, in network n.
func StartServerIn(n proto.Net, kind string, r ServerRequest) (io.Closer, error) {
	k, ok := serverKinds[kind]
	if !ok {
		return nil, fmt.Errorf("no server of kind %q", kind)
	}
	return k.Start(n, r)
}

// serve starts a server of kind on the host playing role: the one path
// every workload takes, whatever machine plays the role. A host that
// does not offer the kind (Offering) refuses it by name.
func serve(env *Env, role, kind string, r ServerRequest) (io.Closer, error) {
	if err := Require(env.Hosts, []string{role}, ServeKind(kind)); err != nil {
		return nil, err
	}
	if s, ok := env.Hosts.(Serving); ok {
		return s.Serve(role, kind, r)
	}
	return StartServerIn(env.Hosts.Net(role), kind, r)
}

// errNoProtocol refuses a request for a protocol's server that names
// none.
var errNoProtocol = errors.New("a protocol's server was asked for with no protocol")

func init() {
	RegisterServer(ServerKind{Name: ServerRequestResponse, Agent: true, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		if r.Protocol == nil {
			return nil, errNoProtocol
		}
		ex, ok := proto.As[proto.Exchanger](r.Protocol)
		if !ok {
			return nil, proto.Require(r.Protocol.Name, proto.CapRequestResponse)
		}
		return ex.Serve(n, r.Port, r.Settings)
	}})
	RegisterServer(ServerKind{Name: ServerBroker, Agent: true, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		if r.Protocol == nil {
			return nil, errNoProtocol
		}
		ps, ok := proto.As[proto.PubSub](r.Protocol)
		if !ok {
			return nil, proto.Require(r.Protocol.Name, proto.CapPubSub)
		}
		return ps.StartBroker(n, r.Port, r.Settings, r.Broker)
	}})
	RegisterServer(ServerKind{Name: ServerDNS, Agent: true, Start: func(n proto.Net, r ServerRequest) (io.Closer, error) {
		if len(r.Names) == 0 {
			return nil, errors.New("dns: no name to answer for")
		}
		return dns.Serve(n, r.Names)
	}})
	RegisterServer(ServerKind{Name: ServerFrames, Here: true, Agent: true, Start: startFrameServer})
}

// startFrameServer runs the protocol's frame server in this process: it
// tells the sink each frame, and answers each whole one with the result
// after the processing time (one frame processed at a time).
func startFrameServer(n proto.Net, r ServerRequest) (io.Closer, error) {
	if r.Protocol == nil {
		return nil, errNoProtocol
	}
	ft, ok := proto.As[proto.FrameTransport](r.Protocol)
	if !ok {
		return nil, proto.Require(r.Protocol.Name, proto.CapFrames)
	}
	fr := r.Frames
	if fr == nil || fr.Sink == nil {
		return nil, errors.New("a frame server needs its stream and whom to tell its arrivals")
	}
	fr.Sink.ClockUncertainty(0) // this machine's clock
	var procMu sync.Mutex
	return ft.ServeFrames(n, r.Port, r.Settings, fr.Options, func(a proto.FrameArrival) int {
		fr.Sink.Frame(a)
		if !a.Complete {
			return 0
		}
		if fr.Processing > 0 {
			procMu.Lock()
			time.Sleep(fr.Processing)
			procMu.Unlock()
		}
		return fr.ResultSize
	})
}

// The kinds of server a workload starts.
const (
	ServerRequestResponse = "request-response" // the protocol's Exchanger server
	ServerBroker          = "broker"           // the protocol's PubSub broker
	ServerDNS             = "dns"              // study B's name server
	ServerFrames          = "frames"           // the protocol's FrameTransport server (study E)
)

// HelperHosts is implemented by Hosts on which a workload's helper
// client of a role's server cannot run beside that server (a server on
// another machine): HelperOf says from which network, and at which
// address of the server, it runs instead. Hosts without it run the
// helper on the server's own host, over loopback.
type HelperHosts interface {
	HelperOf(server, near string) (proto.Net, net.IP, error)
}

// helperOf is where a helper client of role server's server runs (the
// pubsub pacer): beside the server, or, where the Hosts say it cannot,
// at the role near's host.
func helperOf(env *Env, server, near string) (proto.Net, net.IP, error) {
	if h, ok := env.Hosts.(HelperHosts); ok {
		return h.HelperOf(server, near)
	}
	return env.Hosts.Net(server), net.IPv4(127, 0, 0, 1), nil
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
