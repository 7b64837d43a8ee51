// Package workload drives protocols with the traffic patterns of real
// applications and turns what the application observes into records.
//
// A workload type registers itself by name (Register) from its own file: it
// decodes its parameters strictly from the scenario, says how long it plans
// to run, which hosts (roles) it needs, which parameters identify a cell and
// which metrics it produces, and runs against an Env. Adding a workload is
// one new file.
package workload

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/results"
)

// Workload is one configured traffic pattern.
type Workload interface {
	// Info describes the configured workload; it does not change.
	Info() Info
	// Run drives the pattern on env until it ends, the context is
	// cancelled, or it cannot go on. Records go to env.Emit as they come;
	// a failed event is a record with its error, not a returned error.
	// Run returns an error only when the cell as a whole failed (a server
	// that would not start, a cancelled context).
	Run(ctx context.Context, env *Env) error
}

// Info is what the runner, the tables and the report need to know of a
// configured workload.
type Info struct {
	// Type is the registered type name ("periodic").
	Type string
	// Planned is how long Run is expected to take, for progress bars and
	// estimates (not a limit). PlanFor, when set, refines it for a
	// topology whose links' base RTTs sum to rtt (a workload paced by
	// round trips, such as pubsub).
	Planned time.Duration
	PlanFor func(rtt time.Duration) time.Duration
	// Setups and Exchanges are the fresh connections and the round trips
	// the workload waits for one after another (a closed loop): on a
	// lossy path each lost packet of theirs waits out a retransmission
	// timeout, which PlanOn adds (LossWait). An open-loop workload, whose
	// schedule a loss does not move, has neither.
	Setups, Exchanges int
	// Records is how many records a cell is expected to emit (0: not
	// known in advance); a scenario refuses more than MaxRecordsPerCell.
	Records int
	// Key are the parameters that identify a cell in records and
	// summaries (interval_ms, req_size, ...), in column order.
	Key []results.Field
	// Roles are the hosts the workload needs, by role name. The first
	// role's link is the one whose counters the metrics read.
	Roles []string
	// Metrics are the registered metrics the workload's summaries have,
	// in column order; Table is the subset for the terminal table.
	Metrics, Table []string
	// Undefined are the metrics of Metrics that this configuration leaves
	// NaN in every cell (study D's Δ+ under the stop-and-wait pattern):
	// the columns stay, so that a scenario sweeping the configuration has
	// one set of columns, but a requirement on one cannot be judged.
	Undefined []string
	// Columns are the workload's own record columns (Record.Extra).
	Columns []string
	// Plots are the plot kinds (see tlab plots) that suit the workload's
	// records and summaries, in the order a report shows them.
	Plots []string
	// Needs is the capability a protocol must have to run the workload
	// (the zero value: request/response); the scenario refuses the
	// others where they are listed.
	Needs proto.Capability
	// Check, when set, refuses a capable protocol for the workload's own
	// reasons (a broker that cannot speak it), before anything runs.
	Check func(stack *proto.Stack) error
	// Describe is one line for the top of the terminal table.
	Describe string
	// Offered is the payload rate the workload offers each way, for the
	// scenario to compare with the link (zero: not known, or saturating
	// by design as bulk is).
	Offered Offered
	// Floor, when set, is the least value a metric of the workload's can
	// take in a cell whose least one-way times between its roles are
	// oneWay's (floor.go): the workload's own claim, proved beside it,
	// which package explore decides requirements by. ok is false for a
	// metric it proves nothing of, or where oneWay knows no floor.
	Floor func(metric string, oneWay OneWay) (floor float64, ok bool)
}

// Produces tells whether the workload's summaries can hold a value of the
// metric: it is one of Metrics and not one this configuration leaves
// undefined.
func (i Info) Produces(metric string) bool {
	return slices.Contains(i.Metrics, metric) && !slices.Contains(i.Undefined, metric)
}

// Offered is a workload's payload rate from its first role outward (Up)
// and back (Down), in bit/s, with the parameters that set each (where a
// scenario's error points).
type Offered struct {
	UpBps, DownBps     float64
	UpParam, DownParam string
	// UpMessage and DownMessage are the largest application message each
	// way, in bytes: a datagram sender puts one on the link at once, so
	// the scenario warns when one cannot fit a link's queue.
	UpMessage, DownMessage int
}

// Path is what a plan knows of the path a cell's traffic crosses: its
// links' base RTTs summed, and the chance that a packet is lost one way.
type Path struct {
	RTT  time.Duration
	Loss float64
}

// PlanOn is how long the workload is expected to take on a path: its
// plan for the path's RTT, and the retransmission timeouts its set-ups
// and exchanges wait for on average under the path's loss.
func (i Info) PlanOn(p Path) time.Duration {
	plan := i.Planned
	if i.PlanFor != nil {
		plan = i.PlanFor(p.RTT)
	}
	return plan + LossWait(p, i.Setups, i.Exchanges)
}

// Retransmission timeouts, as Linux's TCP has them: a SYN or SYN-ACK
// lost waits the initial RTO of 1 s (RFC 6298, 2.1); a data segment at
// least RTO_min, 200 ms, beyond a round trip. Each repeated loss of the
// same packet doubles the wait (RFC 6298, 5.5). QUIC's probe timeouts are
// shorter, so the plan errs long for it.
const (
	setupRTO = time.Second
	dataRTO  = 200 * time.Millisecond
)

// LossWait is the expected time lost to retransmission timeouts by
// setups fresh connections (a SYN and a SYN-ACK each) and exchanges
// round trips (a request and its answer) on path p, one after another.
// One packet lost with probability q and retried with a timeout T that
// doubles waits, on average, the sum over k ≥ 1 of q^k · T · 2^(k−1),
// which is T·q/(1−2q); q is capped at 0.45, where that grows without
// bound (a path losing half its packets has no meaningful plan).
func LossWait(p Path, setups, exchanges int) time.Duration {
	q := min(p.Loss, 0.45)
	if q <= 0 {
		return 0
	}
	perPacket := func(rto time.Duration) float64 { return float64(rto) * q / (1 - 2*q) }
	return time.Duration(float64(2*setups)*perPacket(setupRTO) + float64(2*exchanges)*perPacket(dataRTO+p.RTT))
}

// Accepts says why the workload cannot run over the named protocol: it
// lacks the capability the workload needs, or the workload's own Check
// refuses it. nil when it can.
func (i Info) Accepts(protocol string) error {
	if err := proto.Require(protocol, i.Needs); err != nil {
		return err
	}
	if i.Check != nil {
		stack, _ := proto.Lookup(protocol)
		return i.Check(stack)
	}
	return nil
}

// Env is what a workload runs against: the cell's hosts, the protocol and
// its settings, and the hooks through which it reports.
type Env struct {
	// Protocol is the cell's stack; it has the capability Info().Needs
	// (proto.As gives the implementation).
	Protocol *proto.Stack
	Settings proto.Settings
	Hosts    Hosts
	// Emit passes one record on. It is safe for concurrent use.
	Emit func(results.Record)
	// StartWindow marks the start of the measured window: the runner
	// reads the link counters and resets the emulator's release
	// statistics. A workload calls it once; one that never calls it is
	// measured from before it started.
	StartWindow func()
	// Note records a figure a metric needs (for example conns_opened).
	Note func(name string, v float64)
	// Fail marks the cell failed, with a reason for the table and the
	// report (a broker that is down, a connection lost mid-pattern). The
	// workload still emits what it measured and returns nil: the sweep
	// goes on and keeps every record.
	Fail func(reason string)
	// PortOffset moves every port the workload's servers listen on (and
	// its clients reach), so that a second workload can run beside the
	// cell's on the same hosts; 0 for the cell's own.
	PortOffset int
	// Dir, when set, is the cell's directory: a workload may keep files of
	// its own there (a command stack's logs and events).
	Dir string
}

// Port is the port a workload uses where it would use base (ServerPort,
// a protocol's broker port): base moved by the Env's offset.
func (e *Env) Port(base int) int { return base + e.PortOffset }

// Hosts gives a workload the hosts of its cell by role.
type Hosts interface {
	// Net returns the host playing role.
	Net(role string) proto.Net
	// Addr returns the address at which host from reaches host to.
	Addr(from, to string) (net.IP, error)
	// Group returns the hosts that play role: one for most roles, every
	// station for a shared access's station role. Net and Addr accept the
	// names it returns as well as role names.
	Group(role string) []string
}

// Common are the scenario fields every workload shares: how long the
// measured part lasts (or how many events it holds) and the warm-up.
type Common struct {
	Duration time.Duration
	Count    int
	Warmup   time.Duration
}

// Param documents one parameter of a workload type for `tlab workloads`.
type Param struct {
	Name    string `json:"name"`
	Default string `json:"default"`
	Doc     string `json:"doc"`
}

// Type is a registered workload type.
type Type struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Params  []Param `json:"params"`
	// Decode makes a workload from its scenario section (the mapping
	// under workload:, without its type key), strictly: an unknown key or
	// an impossible value is an error naming the file and line.
	Decode func(file string, node *yaml.Node, c Common) (Workload, error) `json:"-"`
}

// Defaults is the type configured with its defaults (and one event).
func (t Type) Defaults() (Workload, error) {
	w, err := t.Decode("defaults", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, Common{Count: 1})
	if err != nil {
		return nil, fmt.Errorf("workload %s with its defaults: %w", t.Name, err)
	}
	return w, nil
}

// Needs is the capability the type needs of a protocol, as its defaults
// configure it.
func (t Type) Needs() (proto.Capability, error) {
	w, err := t.Defaults()
	if err != nil {
		return "", err
	}
	return w.Info().Needs.Or(), nil
}

// types holds the registered workload types.
var types = map[string]Type{}

// Register adds a workload type; it is called from the type's own file at
// init. A second type of the same name is a programming error.
func Register(t Type) {
	if _, dup := types[t.Name]; dup {
		panic("workload: " + t.Name + " registered twice")
	}
	types[t.Name] = t
}

// Lookup returns the named workload type.
func Lookup(name string) (Type, error) {
	t, ok := types[name]
	if !ok {
		return Type{}, fmt.Errorf("unknown workload type %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return t, nil
}

// Names lists the registered workload types, sorted.
func Names() []string {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Types returns every registered type, sorted by name.
func Types() []Type {
	var out []Type
	for _, n := range Names() {
		out = append(out, types[n])
	}
	return out
}

// MaxRecordsPerCell bounds a cell's records: an hour at a 1 ms interval
// (3.6 million) fits. A record costs about 0.8 KiB of the process's peak
// memory and 170 B of records.csv (docs/methodology.md, "What a long
// study costs"): at the bound, about 3 GiB and 0.7 GB. Study A's longest
// cell (an hour at 5 ms) has 720 000.
const MaxRecordsPerCell = 4_000_000

// ServerPort is where a client-server workload's server listens.
const ServerPort = 4433

// ClientServerRoles are the roles of a request/response workload.
var ClientServerRoles = []string{"client", "server"}

// StartServer starts the protocol's server on the host playing role
// server; the returned function stops it.
func StartServer(env *Env) (stop func() error, err error) {
	srv, err := serve(env, "server", ServerRequestResponse, ServerRequest{Protocol: env.Protocol, Port: env.Port(ServerPort), Settings: env.Settings})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return srv.Close, nil
}

// NewClient makes the protocol's client on the host playing client,
// towards the server. Connecting may take a handshake over a slow link, so
// it gets 30 s.
func NewClient(ctx context.Context, env *Env) (proto.Client, error) {
	ip, err := env.Hosts.Addr("client", "server")
	if err != nil {
		return nil, err
	}
	ex, ok := proto.As[proto.Exchanger](env.Protocol)
	if !ok {
		return nil, proto.Require(env.Protocol.Name, proto.CapRequestResponse)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := ex.NewClient(dctx, env.Hosts.Net("client"), net.JoinHostPort(ip.String(), strconv.Itoa(env.Port(ServerPort))), env.Settings)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
