package experiment

import (
	"context"
	"errors"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/cross"
	"tlab/internal/emu"
	"tlab/internal/plan"
	"tlab/internal/proto"
	_ "tlab/internal/proto/all"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// loopbackHosts plays every role in this process's own network, each
// reaching the others at 127.0.0.1: a site needing no privileges.
type loopbackHosts struct{}

func (loopbackHosts) Net(string) proto.Net             { return proto.LocalNet{} }
func (loopbackHosts) Addr(_, _ string) (net.IP, error) { return net.IPv4(127, 0, 0, 1), nil }
func (loopbackHosts) Group(role string) []string       { return []string{role} }

// siteMeter counts how the cell reads it.
type siteMeter struct{ stats, resets int }

func (m *siteMeter) Stats() (emu.EngineStats, error) { m.stats++; return emu.EngineStats{}, nil }
func (m *siteMeter) ResetLateness() error            { m.resets++; return nil }

// fakeSite is a site on loopback that records what RunCell did with it.
type fakeSite struct {
	cellrun.CellOnly
	meter    siteMeter
	opened   int
	closed   int
	checkErr error
	emulated bool
	rtt      float64
}

func (s *fakeSite) Open(_ context.Context, _ cellrun.CellSpec, _ workload.Info) (*cellrun.Place, error) {
	s.opened++
	return &cellrun.Place{Hosts: loopbackHosts{}, Meter: &s.meter, CertIP: net.IPv4(127, 0, 0, 1), RTTMs: s.rtt, Emulated: s.emulated,
		Beside: func(string) (cross.Endpoints, error) { return cross.Endpoints{}, errors.New("no link on loopback") },
		Check:  func() error { return s.checkErr },
		Close:  func() error { s.closed++; return nil }}, nil
}

// siteSpec is a cell of sc (its first) at site.
func siteSpec(t *testing.T, sc *scenario.Scenario, site cellrun.Site) cellrun.CellSpec {
	t.Helper()
	cells, err := plan.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	spec := cellrun.SpecOf(cells[0], 1)
	spec.Site = site
	return spec
}

// TestRunCellOnAFakeSite runs a whole cell, without root, at a site that is
// this process's loopback: the cell opens the site once and closes it,
// reads its meter around the window, asks it whether it stayed whole,
// takes its round trip for rtt_ms and, where nothing was emulated, leaves
// the emulator's figures unknown rather than zero.
func TestRunCellOnAFakeSite(t *testing.T) {
	sc, err := scenario.Parse("site.yaml", []byte("name: site\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 20\nwarmup: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	site := &fakeSite{rtt: 12.5}
	res, err := cellrun.RunCell(context.Background(), siteSpec(t, sc, site), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if site.opened != 1 || site.closed != 1 {
		t.Errorf("site opened %d and closed %d times, want once each", site.opened, site.closed)
	}
	if site.meter.stats < 2 || site.meter.resets < 1 {
		t.Errorf("meter read %d times and reset %d: want the window's start and end", site.meter.stats, site.meter.resets)
	}
	if got := res.Summary.Float("requests"); got != 20 {
		t.Errorf("%v requests, want 20", got)
	}
	if got := res.Summary.Float("rtt_ms"); got != 12.5 {
		t.Errorf("rtt_ms %v, want the site's 12.5", got)
	}
	if v := res.Summary.Float("emu_release_p99_us"); !math.IsNaN(v) {
		t.Errorf("emu_release_p99_us %v at a site with no emulator, want NaN (unknown)", v)
	}
	// A site that went away during the cell: the cell is not complete.
	site.checkErr = errors.New("the agent went away")
	if _, err := cellrun.RunCell(context.Background(), siteSpec(t, sc, site), nil, nil); err == nil || !strings.Contains(err.Error(), "went away") {
		t.Errorf("a site that broke during the cell: %v", err)
	}
	if site.closed != 2 {
		t.Errorf("a failed cell left its site open (%d closes for 2 opens)", site.closed)
	}
}

// TestWorkloadBesideTheCells: a scenario's beside: runs a second control
// loop over another stack beside the cell's, on the same hosts with its
// own ports; its records go to beside-NAME.csv and its figures are the
// cell's beside_NAME_* columns. Cross traffic at a site with no link to
// load is refused, not run elsewhere.
func TestWorkloadBesideTheCells(t *testing.T) {
	sc, err := scenario.Parse("beside.yaml", []byte(`name: beside
profiles: [ethernet]
protocols: [tcp]
workload: {type: periodic, interval: 10ms}
count: 30
warmup: 0s
beside:
  - name: loop
    protocol: quic
    workload: {type: periodic, interval: 20ms, payload: 100}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := siteSpec(t, sc, &fakeSite{})
	spec.BesideDir = dir
	res, err := cellrun.RunCell(context.Background(), spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Summary.Float("requests"); got != 30 {
		t.Errorf("the cell's own workload: %v requests, want 30", got)
	}
	if got := res.Summary.Float("beside_loop_requests"); got != 30 {
		t.Errorf("beside_loop_requests %v, want 30 (the same count, over quic)", got)
	}
	if v := res.Summary.Float("beside_loop_delay_p50_ms"); !(v > 0) {
		t.Errorf("beside_loop_delay_p50_ms %v", v)
	}
	b, err := os.ReadFile(filepath.Join(dir, "beside-loop.csv"))
	if err != nil || strings.Count(string(b), "\n") != 31 || !strings.Contains(string(b), ",quic,") {
		t.Errorf("beside-loop.csv: %v\n%.300s", err, b)
	}
	if why := res.Summary.Label("cell_error"); why != "" {
		t.Errorf("cell_error %q", why)
	}

	// Cross traffic needs a link: the fake site has none.
	sc2, err := scenario.Parse("cross.yaml", []byte("name: c\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\ncross: {flows: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cellrun.RunCell(context.Background(), siteSpec(t, sc2, &fakeSite{}), nil, nil); err == nil || !strings.Contains(err.Error(), "no link") {
		t.Errorf("cross traffic at a site with no link: %v", err)
	}
}

// TestARealPathNeedsItsSite: a scenario that lists the real path's network
// as a profile without its site is refused at validation with file and
// line, saying how to give the site; one that names the site but runs
// without an agent is refused before any cell runs (it used to validate,
// run on a local link and label every row "remote").
func TestARealPathNeedsItsSite(t *testing.T) {
	src := "name: r\nprofiles: [ethernet, remote]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\n"
	_, err := scenario.Parse("r.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `r.yaml:2: profile "remote": remote is the real path to a tlab agent, not an emulated link: give tlab run --remote HOST:PORT`) {
		t.Errorf("profiles: [remote] without the site: %v", err)
	}
	if _, err := scenario.Parse("r.yaml", []byte(src+"sites: {remote: satellite-dish}\n")); err == nil || !strings.Contains(err.Error(), `r.yaml:6: site "satellite-dish" for network remote: want one of agent`) {
		t.Errorf("an unknown site: %v", err)
	}
	if _, err := scenario.Parse("r.yaml", []byte(strings.Replace(src, ", remote", "", 1)+"sites: {elsewhere: agent}\n")); err == nil || !strings.Contains(err.Error(), "r.yaml:6: sites: network elsewhere is not one of the profiles") {
		t.Errorf("a site for no profile: %v", err)
	}
	sc, err := scenario.Parse("r.yaml", []byte(src+"sites: {remote: agent}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := sc.Cells()
	if cells[0].Site != "" || cells[1].Site != cellrun.AgentSite {
		t.Errorf("cells' sites %q, %q: want the testbed, then the agent", cells[0].Site, cells[1].Site)
	}
	f := &fakeAttempts{release: map[string][]float64{"tcp": {10}}, calls: map[string]int{}}
	dir := filepath.Join(t.TempDir(), "run")
	_, err = (&Sweep{Scenario: sc, Dir: dir, SkipCalibration: true, attempt: f.run}).Run(context.Background())
	if !errors.Is(err, cellrun.ErrInput) || !strings.Contains(err.Error(), "network remote runs at the agent site, which this run does not have: give tlab run --remote") {
		t.Errorf("a run without the agent: %v", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("cells ran before the refusal: %v", f.calls)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the refused run made its directory")
	}
}

// fakeBeside records when it was started and stopped.
type fakeBeside struct {
	lead             time.Duration
	started, stopped time.Time
}

func (f *fakeBeside) Lead() time.Duration { return f.lead }
func (f *fakeBeside) Start(context.Context, *cellrun.Place, proto.Settings) error {
	f.started = time.Now()
	return nil
}
func (f *fakeBeside) Stop() (map[string]float64, error) { f.stopped = time.Now(); return nil, nil }
func (f *fakeBeside) Columns() []string                 { return nil }
func (f *fakeBeside) Failed() string                    { return "" }

// TestBesidesWithoutALeadStartWithTheWorkload: traffic with a lead (the
// cross: load) starts that long before the workload; another workload
// beside it has none and starts with the cell's own, not with the load.
func TestBesidesWithoutALeadStartWithTheWorkload(t *testing.T) {
	load, loop := &fakeBeside{lead: 300 * time.Millisecond}, &fakeBeside{}
	g, err := cellrun.StartBesides(context.Background(), []cellrun.Beside{load, loop}, &cellrun.Place{}, proto.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WaitForWorkload(context.Background()); err != nil {
		t.Fatal(err)
	}
	workload := time.Now()
	if _, _, err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if load.started.IsZero() || workload.Sub(load.started) < 300*time.Millisecond {
		t.Errorf("the load started %v before the workload, want its 300 ms lead", workload.Sub(load.started))
	}
	if loop.started.IsZero() || loop.started.Before(load.started.Add(300*time.Millisecond)) {
		t.Errorf("the beside workload started %v after the load, want with the workload (after the lead)", loop.started.Sub(load.started))
	}
}

// TestLinkOverridesGoInFrontOfASite: on a network a site provides (the
// real path), the scenario's link overrides and its sweeps of link fields
// are the whole link the cell emulates in front of it, over a perfect one
// (no profile's fields); without overrides nothing is emulated. The run
// names them in its own words.
func TestLinkOverridesGoInFrontOfASite(t *testing.T) {
	text := "name: front\nprofiles: [" + "remote" + "]\nsites: {remote: " + cellrun.AgentSite + "}\nprotocols: [tcp]\nworkload: {type: periodic}\ncount: 5\n"
	sc, err := scenario.Parse("front.yaml", []byte(text+"link: {up: {loss: 1%}}\nmatrix: {link.delay: [5ms, 10ms]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.LinkOverrides(), "link: {up: {loss: 1%}}; swept link.delay over 5ms, 10ms"; got != want {
		t.Errorf("LinkOverrides() = %q, want %q", got, want)
	}
	cells, err := plan.Compile(sc)
	if err != nil || len(cells) != 2 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	for i, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond} {
		spec := cellrun.SpecOf(cells[i], 2)
		cfg := spec.Topology.Links[0].Config
		if cfg.Up.Loss.Rate != 0.01 || cfg.Up.Delay.D() != want || cfg.Down.Delay.D() != want || cfg.Up.Rate != 0 || cfg.Down.Loss.Rate != 0 {
			t.Errorf("cell %d emulates %+v in front of the path; want up loss 1%%, delay %v each way, nothing else", i, cfg, want)
		}
	}
	plain, err := scenario.Parse("plain.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if cells, err = plan.Compile(plain); err != nil {
		t.Fatal(err)
	}
	spec := cellrun.SpecOf(cells[0], 1)
	if !spec.Topology.Links[0].Config.IsPerfect() || plain.LinkOverrides() != "" {
		t.Errorf("a real path without overrides gets %+v (%q) in front of it; want nothing", spec.Topology.Links[0].Config, plain.LinkOverrides())
	}
}
