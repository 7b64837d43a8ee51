package cellrun

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"tlab/internal/cross"
	"tlab/internal/hostnoise"
	"tlab/internal/proto"
	"tlab/internal/remote"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// AgentSite is the kind of site a remote run's real path is: a scenario's
// sites: {remote: agent} runs that network's cells across the path to the
// run's agent (tlab run --remote sets it).
const AgentSite = "agent"

func init() {
	RegisterSite(scenario.SiteKind{Kind: AgentSite, Network: results.RealPath,
		Doc: "the real path to a tlab agent", Flag: "tlab run --remote HOST:PORT (docs/guide.md, \"Across a real network\")"},
		newAgentSite)
}

// agentSite runs a cell across the real path: the servers on the agent,
// the clients here; nothing is emulated and there are no counters. The
// run's agent site is Behind(CellLink, agentSite): where the cell's link
// is not perfect (link overrides on the real path's network), tlab
// emulates it in front of the path, the clients behind it. Its run starts with the agent's
// dial and the path's check, and ends with the path's check again.
type agentSite struct {
	setup  SiteSetup
	target *RemoteTarget
	// resumed is the manifest of the run it resumes (nil: a new run).
	resumed *results.Manifest
	// path is the path from Start on; start its check then.
	path  *RemotePath
	start *results.PathCheck
}

// newAgentSite is the agent's site for a run: the agent given (Given, a
// *RemoteTarget), or the one the resumed run's manifest names; none
// (nil) for a run given no agent.
func newAgentSite(setup SiteSetup) (Site, error) {
	given, _ := setup.Given.(*RemoteTarget)
	dir := ""
	if setup.Resume {
		dir = setup.Dir
	}
	target, m, err := remoteTarget(given, dir)
	if err != nil || target == nil {
		return nil, err
	}
	// The cell's link overrides are emulated in front of the path.
	return Behind(CellLink, &agentSite{setup: setup, target: target, resumed: m}), nil
}

// Start dials the agent and measures the path (and both hosts' noise).
func (s *agentSite) Start(ctx context.Context) error {
	agent, err := dialAgent(ctx, s.target, s.resumed, s.setup.Dir)
	if err != nil {
		return err
	}
	phase := "start"
	if s.setup.Resume {
		phase = "resume"
	}
	check, err := checkPath(agent, phase)
	if err != nil {
		agent.Close()
		return fmt.Errorf("agent %s: %w", agent.Addr, err)
	}
	if log := s.setup.Log; log != nil {
		fmt.Fprintf(log, "across the real path to agent %s (%s, %s): round trip %.2f ms (median %.2f), clock offset %+.2f ± %.2f ms\n",
			agent.Addr, agent.Agent.Hostname, agent.Agent.Fingerprint[:16], check.RTTMinMs, check.RTTMedianMs, check.OffsetMs, check.UncertaintyMs)
		if inFront := s.setup.Scenario.LinkOverrides(); inFront != "" {
			fmt.Fprintf(log, "emulated in front of the real path, on this machine: %s\n", inFront)
		}
	}
	s.path, s.start = &RemotePath{Agent: agent, RTTMs: check.RTTMinMs, OffsetMs: check.OffsetMs, UncertaintyMs: check.UncertaintyMs}, &check
	return nil
}

// Note names the agent in the manifest (once) and adds the path's check
// at this start or resume.
func (s *agentSite) Note(m *results.Manifest) {
	if s.path == nil {
		return
	}
	a := s.path.Agent
	if m.Remote == nil {
		m.Remote = &results.Remote{Address: a.Addr, Fingerprint: a.Agent.Fingerprint, Hostname: a.Agent.Hostname, Emulated: s.setup.Scenario.LinkOverrides()}
	}
	if s.start != nil {
		m.Remote.Checks = append(m.Remote.Checks, *s.start)
	}
}

// Finish checks the path at the end of a completed run (the manifest
// keeps it, and a clock drift beyond the checks' uncertainty is a
// warning) and closes the session.
func (s *agentSite) Finish(completed bool) error {
	if s.path == nil {
		return nil
	}
	agent := s.path.Agent
	defer agent.Close()
	if !completed {
		return nil
	}
	check, err := checkPath(agent, "end")
	if err == nil {
		var drift string
		drift, err = recordPathCheck(s.setup.Dir, agent, check)
		if drift != "" && s.setup.Log != nil {
			fmt.Fprintf(s.setup.Log, "warning: %s\n", drift)
		}
	}
	if err != nil {
		return fmt.Errorf("agent %s at the end: %w", agent.Addr, err)
	}
	return nil
}

func (s *agentSite) Open(ctx context.Context, spec CellSpec, info workload.Info) (*Place, error) {
	agentIP := s.path.Agent.Host()
	p := &Place{
		Hosts:  remoteHosts{path: s.path, agentIP: agentIP, protocol: spec.Cell.Protocol},
		Meter:  NoLinkMeter{},
		CertIP: agentIP,
		RTTMs:  s.path.RTTMs, // the real path's, measured at the run's start
		// A cell during which the agent went away measured a broken
		// path, not the protocol: it is not complete, and a resume runs
		// it again.
		Check: func() error {
			if err := s.path.Agent.Call(remote.OpPing, nil, nil); err != nil {
				return fmt.Errorf("the agent at %s went away during the cell: %w", s.path.Agent.Addr, err)
			}
			return nil
		},
	}
	// Traffic beside the workload crosses the whole path, as the
	// workload does: its far end runs on the agent.
	p.Beside = func(string) (cross.Endpoints, error) {
		h := p.Hosts.(remoteHosts)
		return cross.Endpoints{Client: h.Net(""), ServerAddr: agentIP, Far: &agentBulk{hosts: h}}, nil
	}
	// An emulated link in front of the path (Behind) moves the clients
	// behind it; the agent must answer through it.
	p.Beyond = &Beyond{IPs: []net.IP{agentIP}, Probe: s.path.Agent.Addr, Name: "the agent at " + s.path.Agent.Addr,
		Hosts: func(local proto.Net) workload.Hosts {
			h := p.Hosts.(remoteHosts)
			h.local = local
			return h
		}}
	return p, nil
}

// agentBulk is the far end of cross traffic's bulk flows on the agent.
type agentBulk struct {
	hosts remoteHosts
	id    int
}

func (b *agentBulk) ServeBulk(kind string, s proto.Settings) (int, error) {
	args, err := b.hosts.serveArgs(remote.KindBulk, kind, remote.BulkPort, s)
	if err != nil {
		return 0, err
	}
	var r remote.ServeResult
	if err := b.hosts.path.Agent.Call(remote.OpServe, args, &r); err != nil {
		return 0, fmt.Errorf("the far end of the bulk flows on the agent: %w", err)
	}
	b.id = r.ID
	return remote.BulkPort, nil
}

func (b *agentBulk) Received() ([]cross.FlowCount, error) {
	var counts []cross.FlowCount
	if err := b.hosts.path.Agent.Call(remote.OpBulkCounts, remote.StopArgs{ID: b.id}, &counts); err != nil {
		return nil, fmt.Errorf("what the agent received of the bulk flows: %w", err)
	}
	return counts, nil
}

func (b *agentBulk) Close() error {
	return b.hosts.path.Agent.Call(remote.OpStop, remote.StopArgs{ID: b.id}, nil)
}

// RemoteTarget says which agent a remote run measures across, and how the
// controller knows it (a pairing the first time). An empty Addr resumes
// a remote run across the path its manifest names.
type RemoteTarget struct {
	Addr     string
	Pairing  *remote.Pairing
	StateDir string
}

// RemotePath is the real path to a tlab agent that a remote run measures
// across: its session, and the path's round trip measured at the run's
// start (the cells' rtt_ms).
type RemotePath struct {
	Agent *remote.Client
	RTTMs float64
	// OffsetMs is the agent's clock less this one's, within
	// ± UncertaintyMs, measured at the run's start.
	OffsetMs, UncertaintyMs float64
}

// remoteRoles are the roles that run on the agent: the servers. The
// clients, and study D's subscriber (so that Δ is read on one clock), stay
// on this machine.
var remoteRoles = map[string]bool{"server": true, "broker": true}

// remoteHosts plays a remote cell's roles: the servers' on the agent,
// every other in this process's own network.
type remoteHosts struct {
	path     *RemotePath
	agentIP  net.IP
	protocol string // the cell's
	// local is where this machine's roles run: behind the emulated link
	// in front of the path, or (nil) this process's own network.
	local proto.Net
}

func (h remoteHosts) IsRemote(role string) bool { return remoteRoles[role] }

// Offers says what each role's host offers: a role on the agent the
// server kinds an agent serves (workload.AgentKinds: the registry's, as
// the agent's session reads it), and no command or workload beside the
// cell's (the agent serves the cell's own workload); a role here every
// registered kind, a workload beside, and commands where its network
// (behind the link in front of the path) can start a program.
func (h remoteHosts) Offers(role string, c workload.Capability) bool {
	if h.IsRemote(role) {
		return slices.ContainsFunc(workload.AgentKinds(), func(kind string) bool { return c == workload.ServeKind(kind) })
	}
	if c == workload.RunCommands {
		_, ok := h.Net(role).(proto.ProcessHost)
		return ok
	}
	return true
}

func (h remoteHosts) Net(role string) proto.Net {
	if h.IsRemote(role) {
		return agentNet{role}
	}
	if h.local != nil {
		return h.local
	}
	return proto.LocalNet{}
}

func (h remoteHosts) Addr(_, to string) (net.IP, error) {
	if h.IsRemote(to) {
		return h.agentIP, nil
	}
	return net.IPv4(127, 0, 0, 1), nil
}

func (h remoteHosts) Group(role string) []string { return []string{role} }

// Serve starts a role's server: on the agent for the servers' roles,
// with the run's settings and server certificate (its CA stays here);
// in this machine's network (or behind the link in front) for the
// others.
func (h remoteHosts) Serve(role, kind string, r workload.ServerRequest) (io.Closer, error) {
	if !h.IsRemote(role) {
		return workload.StartServerIn(h.Net(role), kind, r)
	}
	if kind == workload.ServerFrames {
		return h.serveFrames(r)
	}
	if kind == workload.ServerBroker && r.Broker != "" && r.Broker != proto.BrokerEmbedded {
		return nil, fmt.Errorf("broker %s: across a real path the agent runs the embedded broker only", r.Broker)
	}
	protocol := ""
	if r.Protocol != nil {
		protocol = r.Protocol.Name
	}
	args, err := h.serveArgs(kind, protocol, r.Port, r.Settings)
	if err != nil {
		return nil, err
	}
	srv, err := h.path.Agent.Serve(args)
	if err != nil {
		return nil, fmt.Errorf("on the agent: %w", err)
	}
	return srv, nil
}

// serveArgs asks for a server of kind: the name server, or a protocol's
// with the run's settings and server certificate.
func (h remoteHosts) serveArgs(kind, protocol string, port int, s proto.Settings) (remote.ServeArgs, error) {
	args := remote.ServeArgs{Kind: kind, Protocol: protocol, Port: port}
	if kind == workload.ServerDNS {
		args.Protocol, args.Name = "", proto.ServerName
		return args, nil
	}
	if protocol == "" {
		args.Protocol = h.protocol
	}
	settings, err := json.Marshal(s)
	if err != nil {
		return args, err
	}
	args.Settings = settings
	if s.Certs != nil && len(s.Certs.Server.Certificate) > 0 {
		key, err := x509.MarshalPKCS8PrivateKey(s.Certs.Server.PrivateKey)
		if err != nil {
			return args, err
		}
		args.CertPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certs.Server.Certificate[0]}))
		args.KeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}))
	}
	return args, nil
}

// serveFrames runs a frame server on the agent. It answers each frame
// itself; the frames it saw come back when it is closed, on this clock
// (corrected by the agent's offset, within the offset's uncertainty).
func (h remoteHosts) serveFrames(r workload.ServerRequest) (io.Closer, error) {
	fr := r.Frames
	if fr == nil || fr.Sink == nil {
		return nil, errors.New("a frame server needs its stream and whom to tell its arrivals")
	}
	args, err := h.serveArgs(remote.KindFrames, "", r.Port, r.Settings)
	if err != nil {
		return nil, err
	}
	o := fr.Options
	args.Frames = &remote.FrameServeArgs{FPS: o.FPS, ReassemblyMs: float64(o.ReassemblyTimeout) / 1e6, ResultSize: fr.ResultSize, ProcessingMs: float64(fr.Processing) / 1e6}
	var res remote.ServeResult
	if err := h.path.Agent.Call(remote.OpServe, args, &res); err != nil {
		return nil, err
	}
	fr.Sink.ClockUncertainty(h.path.UncertaintyMs)
	return &remoteFrameServer{path: h.path, id: res.ID, sink: fr.Sink}, nil
}

// remoteFrameServer is a frame server on the agent.
type remoteFrameServer struct {
	path *RemotePath
	id   int
	sink workload.FrameSink
}

// Close gives the sink what the server saw, then stops it.
func (f *remoteFrameServer) Close() error {
	arrivals, err := f.path.Agent.Arrivals(f.id, int64(f.path.OffsetMs*1e6))
	f.sink.Arrived(arrivals)
	return errors.Join(err, f.path.Agent.Call(remote.OpStop, remote.StopArgs{ID: f.id}, nil))
}

// HelperOf runs a helper client of a server on the agent (the pubsub
// pacer) at role near's host, here, across the path; of a server here,
// beside it.
func (h remoteHosts) HelperOf(server, near string) (proto.Net, net.IP, error) {
	if !h.IsRemote(server) {
		return h.Net(server), net.IPv4(127, 0, 0, 1), nil
	}
	ip, err := h.Addr(near, server)
	return h.Net(near), ip, err
}

// agentNet is the network of a role that runs on the agent: nothing of
// this process may open a socket there.
type agentNet struct{ role string }

func (n agentNet) err() error {
	return fmt.Errorf("role %s runs on the agent: this workload cannot start it there", n.role)
}
func (n agentNet) ListenWith(*net.ListenConfig, string, string) (net.Listener, error) {
	return nil, n.err()
}
func (n agentNet) ListenUDP(*net.UDPAddr) (*net.UDPConn, error) { return nil, n.err() }
func (n agentNet) DialContext(context.Context, *net.Dialer, string, string) (net.Conn, error) {
	return nil, n.err()
}

// checkPath measures the path (20 pings) and both hosts' noise over the
// same second, for the manifest.
func checkPath(c *remote.Client, phase string) (results.PathCheck, error) {
	check := results.PathCheck{When: time.Now(), Phase: phase}
	var wg sync.WaitGroup
	wg.Add(1)
	var local hostnoise.Sample
	go func() {
		defer wg.Done()
		p := hostnoise.Start()
		time.Sleep(time.Second)
		local = p.Stop()
	}()
	err := c.Call(remote.OpNoise, remote.NoiseArgs{Ms: 1000}, &check.AgentNoise)
	wg.Wait()
	check.LocalNoise = local
	if err != nil {
		return check, fmt.Errorf("agent noise: %w", err)
	}
	clock, err := c.MeasureClock(20, 5*time.Millisecond)
	if err != nil {
		return check, err
	}
	check.RTTMinMs, check.RTTMedianMs, check.OffsetMs, check.UncertaintyMs, check.Pings = clock.RTTMinMs, clock.RTTMedianMs, clock.OffsetMs, clock.UncertaintyMs, clock.Pings
	return check, nil
}

// remoteTarget is the run's agent: the target given, or, for a resume,
// the agent the run's manifest names (a known agent by then); nil for a
// run across no real path. It also returns the resumed run's manifest.
func remoteTarget(t *RemoteTarget, dir string) (*RemoteTarget, *results.Manifest, error) {
	var m *results.Manifest
	if dir != "" {
		if mm, err := results.ReadManifest(dir); err == nil {
			m = mm
		}
	}
	switch {
	case (t == nil || t.Addr == "") && (m == nil || m.Remote == nil):
		if t != nil {
			return nil, m, InputErr(errors.New("--state applies to runs across a real path (--remote, or the resume of one)"))
		}
		return nil, m, nil // not a remote run
	case t == nil:
		t = &RemoteTarget{Addr: m.Remote.Address}
	case t.Addr == "":
		t = &RemoteTarget{Addr: m.Remote.Address, StateDir: t.StateDir}
	case m != nil && m.Remote != nil && m.Remote.Address != t.Addr:
		return nil, m, InputErr(fmt.Errorf("%s was measured across the path to %s, not %s", dir, m.Remote.Address, t.Addr))
	case m != nil && m.Remote == nil && t != nil:
		return nil, m, InputErr(fmt.Errorf("%s holds a run on emulated links: it cannot continue across a real path", dir))
	}
	return t, m, nil
}

// dialAgent connects to the run's agent; a resumed run's (m) must be the
// agent it was measured with.
func dialAgent(ctx context.Context, t *RemoteTarget, m *results.Manifest, dir string) (*remote.Client, error) {
	c, err := remote.Dial(ctx, t.Addr, remote.DialOptions{StateDir: t.StateDir, Pairing: t.Pairing})
	if err != nil {
		if errors.Is(err, remote.ErrNotPaired) {
			return nil, InputErr(err)
		}
		return nil, err
	}
	if m != nil && m.Remote != nil && m.Remote.Fingerprint != c.Agent.Fingerprint {
		c.Close()
		return nil, InputErr(fmt.Errorf("the agent at %s is not the one %s was measured with", t.Addr, dir))
	}
	return c, nil
}

// recordPathCheck appends a check to the run's manifest. At the end it
// compares the agent's clock offset with the start's, and returns (and
// keeps in the manifest's warnings) what a drift beyond the two
// measurements' uncertainty means for the run's one-way delays.
func recordPathCheck(dir string, c *remote.Client, check results.PathCheck) (warning string, err error) {
	m, err := results.ReadManifest(dir)
	if err != nil {
		return "", err
	}
	if m.Remote == nil {
		m.Remote = &results.Remote{Address: c.Addr, Fingerprint: c.Agent.Fingerprint, Hostname: c.Agent.Hostname}
	}
	m.Remote.Checks = append(m.Remote.Checks, check)
	if warning = m.Remote.ClockDriftWarning(); warning != "" {
		m.Warnings = append(m.Warnings, warning)
	}
	return warning, m.Save(dir)
}
