// Package proto is tlab's protocol seam: what a protocol stack can do
// (its capabilities, one interface each), the registry in which stacks
// register themselves, and the transport layer the stacks share (sockets in
// a host, TLS and QUIC configuration, settings).
//
// The stacks live in one package per family, each registering its
// protocols from init, as database/sql drivers do:
// internal/proto/reqresp (request/response over TCP, TLS, QUIC and HTTP),
// internal/proto/frames (open-loop frames over datagrams and streams) and
// internal/proto/mqtt (publish/subscribe through a broker). A program
// imports internal/proto/all to have every family. Adding a family is one
// new package; adding a protocol to a family is one new file.
package proto

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
)

// Net opens sockets inside one host. It is the seam between protocols and
// the testbed: *testbed.Host implements it.
type Net interface {
	ListenWith(lc *net.ListenConfig, network, addr string) (net.Listener, error)
	ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error)
	DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error)
}

// Capability is something a protocol stack can do, by the interface its
// implementation satisfies. A workload declares the one it needs; the
// scenario refuses a protocol that lacks it, and `tlab protocols`, the
// docs and the "every protocol" tests list protocols by capability.
//
// The zero Capability is CapRequestResponse: a workload that does not say
// what it needs gets the safe default.
type Capability string

// The capabilities. Adding one is one constant, its interface in a file of
// this package, and its entry in capabilities.
const (
	// CapRequestResponse is Exchanger: a server and a client that exchange
	// requests and responses of chosen sizes (workloads periodic, bulk).
	CapRequestResponse Capability = "request-response"
	// CapFetch is Fetcher (with an Exchanger's server): one request on a
	// connection of its own, timed in curl's phases (workload upload).
	CapFetch Capability = "fetch"
	// CapFrames is FrameTransport: open-loop frames with per-datagram
	// accounting (workload frames).
	CapFrames Capability = "frames"
	// CapPubSub is PubSub: a broker and clients that publish and subscribe
	// (workload pubsub).
	CapPubSub Capability = "pubsub"
)

// capabilityInfo says how a capability is recognised and described.
type capabilityInfo struct {
	doc string
	// has tells whether a stack's implementations provide it.
	has func(s *Stack) bool
}

var capabilities = map[Capability]capabilityInfo{
	CapRequestResponse: {"exchanges requests and responses of chosen sizes (Exchanger)", func(s *Stack) bool { return has[Exchanger](s) }},
	CapFetch:           {"makes one request per fresh connection, timed in curl's phases (Fetcher)", func(s *Stack) bool { return has[Fetcher](s) && has[Exchanger](s) }},
	CapFrames:          {"carries open-loop frames with per-datagram accounting (FrameTransport)", func(s *Stack) bool { return has[FrameTransport](s) }},
	CapPubSub:          {"publishes and subscribes through a broker (PubSub)", func(s *Stack) bool { return has[PubSub](s) }},
}

// Capabilities lists every capability, sorted.
func Capabilities() []Capability {
	out := make([]Capability, 0, len(capabilities))
	for c := range capabilities {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Or returns c, or CapRequestResponse when c is the zero Capability.
func (c Capability) Or() Capability {
	if c == "" {
		return CapRequestResponse
	}
	return c
}

// Doc is one line saying what the capability means.
func (c Capability) Doc() string { return capabilities[c.Or()].doc }

// Registration is what one family says of one protocol. Several families
// may register the same name, each with implementations of other
// capabilities (the frames family adds frames to "tcp" and "quic"); a
// capability given twice for one name is a programming error.
type Registration struct {
	// Name is the protocol's short name ("tcp", "h3", "mqtt-quic").
	Name string
	// Doc is one line describing the stack, for `tlab protocols` and
	// docs/metrics.md.
	Doc string
	// Options are the settings (by yaml name) the implementation honours.
	Options []string
	// Impl implements one or more capability interfaces.
	Impl any
}

// Stack is a registered protocol: everything the families registered
// under its name.
type Stack struct {
	Name    string
	docs    []string
	options []string
	impls   []any
}

// Can tells whether the stack has capability c.
func (s *Stack) Can(c Capability) bool {
	info, ok := capabilities[c.Or()]
	return ok && info.has(s)
}

// Capabilities lists what the stack can do, sorted.
func (s *Stack) Capabilities() []Capability {
	var out []Capability
	for _, c := range Capabilities() {
		if s.Can(c) {
			out = append(out, c)
		}
	}
	return out
}

// Options returns the settings the stack honours, sorted.
func (s *Stack) Options() []string { return slices.Clone(s.options) }

// Doc describes the stack: each family's line, joined.
func (s *Stack) Doc() string { return strings.Join(s.docs, "; ") }

// As returns the stack's implementation of interface T (Exchanger,
// Fetcher, FrameTransport, PubSub, or an optional interface such as
// Pipeliner).
func As[T any](s *Stack) (T, bool) {
	for _, impl := range s.impls {
		if t, ok := impl.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

func has[T any](s *Stack) bool { _, ok := As[T](s); return ok }

// Registry holds the registered stacks. Families fill Default from init.
type Registry struct {
	stacks map[string]*Stack
}

// NewRegistry returns an empty registry (tests fill their own with fakes).
func NewRegistry() *Registry { return &Registry{stacks: map[string]*Stack{}} }

// Default is the registry the protocol families register themselves in,
// as database/sql's drivers do.
var Default = NewRegistry()

// Register adds what a family implements under a name to Default.
func Register(r Registration) { Default.Register(r) }

// Register adds r. An unknown option, an implementation of no capability
// or a capability registered twice under one name is a programming error.
func (reg *Registry) Register(r Registration) {
	known := SettingNames()
	for _, o := range r.Options {
		if !slices.Contains(known, o) {
			panic("proto: " + r.Name + " declares unknown option " + o)
		}
	}
	add := &Stack{Name: r.Name, impls: []any{r.Impl}}
	if len(add.Capabilities()) == 0 {
		panic(fmt.Sprintf("proto: %s registers %T, which implements no capability", r.Name, r.Impl))
	}
	s := reg.stacks[r.Name]
	if s == nil {
		s = &Stack{Name: r.Name}
		reg.stacks[r.Name] = s
	}
	for _, c := range add.Capabilities() {
		if s.Can(c) {
			panic(fmt.Sprintf("proto: %s registers capability %s twice", r.Name, c))
		}
	}
	s.impls = append(s.impls, r.Impl)
	if r.Doc != "" {
		s.docs = append(s.docs, r.Doc)
	}
	for _, o := range r.Options {
		if !slices.Contains(s.options, o) {
			s.options = append(s.options, o)
		}
	}
	sort.Strings(s.options)
}

// Names lists the registered protocols, sorted.
func Names() []string { return Default.Names() }

// Names lists the registered protocols, sorted.
func (reg *Registry) Names() []string {
	names := make([]string, 0, len(reg.stacks))
	for n := range reg.stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NamesWith lists the protocols that have capability c, sorted.
func NamesWith(c Capability) []string { return Default.NamesWith(c) }

// NamesWith lists the protocols that have capability c, sorted.
func (reg *Registry) NamesWith(c Capability) []string {
	var out []string
	for _, n := range reg.Names() {
		if reg.stacks[n].Can(c) {
			out = append(out, n)
		}
	}
	return out
}

// Lookup returns the named protocol.
func Lookup(name string) (*Stack, error) { return Default.Lookup(name) }

// Lookup returns the named protocol.
func (reg *Registry) Lookup(name string) (*Stack, error) {
	s, ok := reg.stacks[name]
	if !ok {
		return nil, fmt.Errorf("unknown protocol %q: want one of %s", name, strings.Join(reg.Names(), ", "))
	}
	return s, nil
}

// Options returns the settings the named protocol honours.
func Options(name string) []string {
	if s, err := Lookup(name); err == nil {
		return s.Options()
	}
	return nil
}

// Require says why the named protocol cannot serve a workload that needs
// c, naming the protocols that can; nil when it can.
func Require(name string, c Capability) error { return Default.Require(name, c) }

// Require says why the named protocol cannot serve a workload that needs
// c, naming the protocols that can; nil when it can.
func (reg *Registry) Require(name string, c Capability) error {
	s, err := reg.Lookup(name)
	if err != nil {
		return err
	}
	c = c.Or()
	if s.Can(c) {
		return nil
	}
	can := make([]string, 0, 4)
	for _, have := range s.Capabilities() {
		can = append(can, string(have))
	}
	return fmt.Errorf("%s lacks capability %s (%s); it can: %s; protocols that can: %s",
		name, c, c.Doc(), strings.Join(can, ", "), strings.Join(reg.NamesWith(c), ", "))
}

// MaxMessage is the largest request or response payload tlab's framing
// carries (and its servers accept): 64 MiB. A workload must refuse larger
// sizes when it is configured, not fail every exchange at run time.
const MaxMessage = 64 << 20
