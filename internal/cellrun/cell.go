// Package cellrun runs one cell: it opens the cell's site (a testbed of
// the scenario's topology here, a tlab agent across a real path, or the
// two composed: Behind), runs the workload over the protocol on it with
// what runs beside it, passes the records on as they come, and computes
// the cell's summary from the records and the emulator's counters, with
// the quality rule's verdict on what the host did meanwhile. Every run of
// tlab, swept, ad hoc, tlab shell, the crosscheck or study C's real-stack
// comparison, goes through RunCell; package experiment decides which
// cells run, in what order, and where their results go.
package cellrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"tlab/internal/beside"
	"tlab/internal/cross"
	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/metrics"
	"tlab/internal/pki"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// CellSpec is everything one cell needs: a topology with its links, a
// protocol, a workload and the settings, on a testbed of its own.
type CellSpec struct {
	// Cell identifies the cell in records and summaries.
	Cell results.Cell
	// Index and Total place the cell in its run (for progress).
	Index, Total int
	Topology     testbed.Topology
	// Roles maps each of the workload's roles to a host of Topology;
	// Groups, where a role has several hosts (a shared access's
	// stations), lists them all, Roles naming the first.
	Roles    map[string]string
	Groups   map[string][]string
	Workload workload.Workload
	Settings proto.Settings
	// Emulator is the engine the cell's links run on (the scenario's
	// emulator: section).
	Emulator       emu.EngineOptions
	RemoveOutliers bool
	// CaptureDir, when set, receives pcap per host interface, the TLS key
	// log and qlog files.
	CaptureDir string
	// ServerLog, when set, is the file the servers' own messages are
	// appended to (their count is the cell's server_log_lines).
	ServerLog string
	// Dir, when set, is the cell's directory, where a workload may keep
	// files of its own (a command stack's logs and events).
	Dir string
	// Site is where the cell runs: a fresh testbed of Topology when nil,
	// or another (the real path to an agent: the servers there, the
	// clients here).
	Site Site
	// Label names the run in the run registry, so that a concurrent run
	// can say which run disturbed it.
	Label string
	// Cross is the traffic beside the workload on its link; CrossLog,
	// when set, the file its 100 ms bins are written to (cross.csv).
	Cross    cross.Config
	CrossLog string
	// Beside are other workloads beside the cell's, each over its own
	// stack; BesideDir, when set, receives their records
	// (beside-NAME.csv).
	Beside    []beside.Flow
	BesideDir string
}

// SpecOf is the cell spec of a compiled cell (of total in its run): the
// compiled values, without the run's directories, site and label.
func SpecOf(c plan.Cell, total int) CellSpec {
	info := c.Workload.Info()
	return CellSpec{
		Cell: results.Cell{ID: c.ID, Profile: c.Profile, Protocol: c.Protocol, Workload: info.Type, Rep: c.Rep,
			Seed: c.Seed, Key: info.Key, Params: c.Params},
		Index: c.Index, Total: total, Topology: c.Topology, Roles: c.Roles, Groups: c.Groups, Workload: c.Workload, Settings: c.Settings,
		Emulator: c.Emulator, RemoveOutliers: c.RemoveOutliers,
		Cross: c.Cross, Beside: c.Beside,
	}
}

// Progress is a snapshot of a running cell.
type Progress struct {
	Cell, Cells int
	Profile     string
	Protocol    string
	Elapsed     time.Duration
	Planned     time.Duration
	Records     int
	LastDelayMs float64
}

// CellResult is what a cell measured.
type CellResult struct {
	Summary results.Summary
	// Records are every record, warm-up included, in completion order.
	Records []results.Record
	// WindowStart is when the measured window started (wall clock).
	WindowStart time.Time
	// Links are the emulator's counters over the measured window, by
	// link name.
	Links map[string]emu.LinkStats
	// Release is the emulator's release error over the measured window.
	Release emu.LatencySummary
	// Overlaps are other tlab testbeds seen live on this machine while
	// the cell ran: they shared the CPUs and disturbed its timing.
	Overlaps []testbed.LiveRun
	// Host is what the host-noise probe saw over the measured window.
	Host hostnoise.Sample
	// Failed, when set, says why the workload failed the cell; its
	// records and summary are kept.
	Failed string
	// window is the measured link's counters, up being what the
	// workload's first role sends.
	Window emu.LinkStats
}

// hosts gives a workload its hosts by role (or by host name, for the
// members of a group).
type Hosts struct {
	Tb     *testbed.Testbed
	Roles  map[string]string
	groups map[string][]string
}

func (h Hosts) host(name string) string {
	if host, ok := h.Roles[name]; ok {
		return host
	}
	return name
}

func (h Hosts) Net(role string) proto.Net { return h.Tb.Host(h.host(role)) }

func (h Hosts) Addr(from, to string) (net.IP, error) {
	return h.Tb.Addr(h.host(from), h.host(to))
}

func (h Hosts) Group(role string) []string {
	if g := h.groups[role]; len(g) > 0 {
		return slices.Clone(g)
	}
	return []string{h.Roles[role]}
}

// RunCell runs one cell at its site (a fresh testbed of its topology
// unless the spec names another), with the workload over the protocol and
// whatever runs beside it, passes each record to sink as it comes, and
// returns the cell's summary and counters. Everything the site and the
// cell made is gone when it returns, also on error or cancellation.
func RunCell(ctx context.Context, spec CellSpec, sink func(results.Record) error, progress func(Progress)) (res CellResult, err error) {
	info := spec.Workload.Info()
	p, err := cellStack(spec, info)
	if err != nil {
		return CellResult{}, err
	}
	settings, serverLines, closeFiles, err := cellSettings(spec)
	defer closeFiles()
	if err != nil {
		return CellResult{}, err
	}
	site := spec.Site
	if site == nil {
		site = TestbedSite{}
	}
	place, err := site.Open(ctx, spec, info)
	defer func() {
		if cerr := place.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return CellResult{}, err
	}
	if settings.Certs, err = pki.NewCertificates(place.CertIP); err != nil {
		return CellResult{}, err
	}
	beside, err := startBeside(ctx, spec, info, place, settings)
	if err != nil {
		return CellResult{}, err
	}
	defer beside.abort()

	led := NewCellLedger(place.Meter, sink, func() NoiseProbe { return hostnoise.Start() }, info.Records)
	// A workload that never marks its window is measured from here.
	led.StartWindow()
	env := led.Env(p, settings, place.Hosts)
	env.Dir = spec.Dir
	watch := watchCell(spec, info, led, progress)
	if err := beside.WaitForWorkload(ctx); err != nil {
		watch.stop()
		led.StopProbe()
		return CellResult{}, err
	}
	runErr := spec.Workload.Run(ctx, env)
	facts, failures, besideErr := beside.Stop()
	if besideErr != nil && runErr == nil {
		runErr = besideErr
	}
	maps.Copy(led.Facts, facts)
	for _, why := range failures {
		led.fail(why)
	}
	overlaps := watch.stop()
	host := led.StopProbe()
	if runErr != nil {
		return CellResult{}, runErr
	}
	if err := led.Err(); err != nil {
		return CellResult{}, err
	}
	return finishCell(spec, info, place, led, settings, serverLines, beside.columns(), overlaps, host)
}

// cellStack checks that the cell's hosts play every role of its workload
// and finds its protocol: none for a stack given as commands (its
// commands are the stack).
func cellStack(spec CellSpec, info workload.Info) (*proto.Stack, error) {
	if len(info.Roles) == 0 {
		return nil, errors.New("workload names no roles")
	}
	for _, r := range info.Roles {
		if _, ok := spec.Roles[r]; !ok {
			return nil, fmt.Errorf("no host plays the workload's role %q", r)
		}
	}
	if ownsItsStack(spec.Workload) {
		return nil, nil
	}
	if err := info.Accepts(spec.Cell.Protocol); err != nil {
		return nil, err
	}
	return proto.Lookup(spec.Cell.Protocol)
}

// cellSettings are the cell's protocol settings with what the cell
// writes to (the TLS key log and qlog under CaptureDir, the servers' log)
// and counts (handshakes, TCP connections); closeFiles closes the files,
// also after an error.
func cellSettings(spec CellSpec) (settings proto.Settings, serverLines *lineCounter, closeFiles func(), err error) {
	var files []io.Closer
	closeFiles = func() {
		for _, f := range files {
			f.Close()
		}
	}
	settings = spec.Settings
	serverLines = &lineCounter{}
	if spec.CaptureDir != "" {
		if settings.QlogDir == "" {
			settings.QlogDir = filepath.Join(spec.CaptureDir, "qlog")
		}
		if err := results.Mkdir(spec.CaptureDir); err != nil {
			return settings, serverLines, closeFiles, err
		}
		kl, err := results.Create(filepath.Join(spec.CaptureDir, "keys.log"))
		if err != nil {
			return settings, serverLines, closeFiles, err
		}
		files = append(files, kl)
		settings.KeyLog = kl
	}
	if spec.ServerLog != "" {
		f, err := results.Append(spec.ServerLog)
		if err != nil {
			return settings, serverLines, closeFiles, err
		}
		files = append(files, f)
		serverLines.w = f
	}
	settings.ServerLog = serverLines
	settings.Handshakes = &proto.Handshakes{}
	settings.TCP = &proto.TCPConns{}
	return settings, serverLines, closeFiles, nil
}

// cellWatch samples the other tlab runs live on this machine (at the
// start, every second and at the end) and reports the cell's progress
// every 250 ms while the workload runs.
type cellWatch struct {
	mu       sync.Mutex
	overlaps []testbed.LiveRun
	quit     chan struct{}
	done     chan struct{}
}

func watchCell(spec CellSpec, info workload.Info, led *cellLedger, progress func(Progress)) *cellWatch {
	w := &cellWatch{quit: make(chan struct{}), done: make(chan struct{})}
	w.sampleOthers()
	began := time.Now()
	go func() {
		defer close(w.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for tick := 1; ; tick++ {
			select {
			case <-w.quit:
				return
			case <-t.C:
				if tick%4 == 0 {
					w.sampleOthers()
				}
				if progress != nil {
					n, last := led.Progress()
					progress(Progress{Cell: spec.Index + 1, Cells: spec.Total, Profile: spec.Cell.Profile, Protocol: spec.Cell.Protocol,
						Elapsed: time.Since(began), Planned: info.PlanOn(PathOf(spec.Topology)), Records: n, LastDelayMs: last})
				}
			}
		}
	}()
	return w
}

func (w *cellWatch) sampleOthers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range testbed.OtherLiveRuns() {
		if !slices.ContainsFunc(w.overlaps, func(x testbed.LiveRun) bool { return x.ID == o.ID }) {
			w.overlaps = append(w.overlaps, o)
		}
	}
}

// stop ends the watch, samples the other runs once more and returns
// every one seen.
func (w *cellWatch) stop() []testbed.LiveRun {
	close(w.quit)
	<-w.done
	w.sampleOthers()
	return w.overlaps
}

// finishCell reads the cell's result once the workload has ended: the
// place's own check, the measured window's counters, the links'
// timelines, the servers' log lines and the emulator's figures (unknown
// where none ran), and the summary.
func finishCell(spec CellSpec, info workload.Info, place *Place, led *cellLedger, settings proto.Settings, serverLines *lineCounter,
	besideColumns []string, overlaps []testbed.LiveRun, host hostnoise.Sample) (CellResult, error) {
	if place.Check != nil {
		if err := place.Check(); err != nil {
			return CellResult{}, err
		}
	}
	end, err := place.Meter.Stats()
	if err != nil {
		return CellResult{}, err
	}
	res := led.Result(end, place.Measured.Name, place.UpIsAtoB, overlaps, host)
	if place.Emulated {
		// The links' timelines and live changes, aligned with the window
		// (link-events.csv).
		if err := WriteLinkEvents(spec.Dir, spec.Topology, place.Meter, time.Duration(led.atStart.ClockNs), time.Duration(end.ClockNs), led.start.UnixNano()); err != nil {
			return CellResult{}, err
		}
	}
	led.Facts["server_log_lines"] = float64(serverLines.count())
	if !place.Emulated {
		// No emulator ran: its figures are unknown, not zero.
		for _, k := range emulatorFacts {
			led.Facts[k] = math.NaN()
		}
	}
	spec.Settings.Handshakes, spec.Settings.TCP = settings.Handshakes, settings.TCP
	res.Summary, err = Summarize(spec, info, place, besideColumns, res.Records, res.Window, led.Facts)
	res.Summary.Set("cell_error", res.Failed)
	return res, err
}

// summarize makes the cell's row: identity, the workload's key, the
// measured link's RTT, the workload's metrics, the settings and the
// emulator's own figures.
func Summarize(spec CellSpec, info workload.Info, place *Place, besideColumns []string, records []results.Record, window emu.LinkStats, facts map[string]float64) (results.Summary, error) {
	c := spec.Cell
	s := results.Summary{Cell: c.ID, Profile: c.Profile, Protocol: c.Protocol, Workload: info.Type, Rep: c.Rep, Seed: c.Seed, Params: c.Params}
	s.Fields = append(s.Fields, c.Key...)
	s.Set("rtt_ms", place.RTTMs)
	var measured []results.Record
	for _, r := range records {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	slices.SortFunc(measured, func(a, b results.Record) int { return a.Seq - b.Seq })
	// The workload's key (its interval, sizes) is known to its metrics too:
	// a deadline is the schedule's period.
	facts = maps.Clone(facts)
	if facts == nil {
		facts = map[string]float64{}
	}
	for _, k := range c.Key {
		if v, ok := k.Value.(float64); ok {
			if _, noted := facts[k.Name]; !noted {
				facts[k.Name] = v
			}
		}
	}
	in := &metrics.Input{Records: measured, Facts: facts, RemoveOutliers: spec.RemoveOutliers,
		Up: counters(window.Up), Down: counters(window.Down), NoLink: !place.Emulated || spec.Cross.Active()}
	fields, err := metrics.Default.Compute(info.Metrics, in)
	if err != nil {
		return s, err
	}
	s.Fields = append(s.Fields, fields...)
	// A setting is recorded where the protocol honours it and left empty
	// elsewhere, so a row never claims, say, a TLS version for plain TCP.
	// The TLS version and key exchange are those the client's handshakes
	// negotiated (empty when none completed), not those asked for.
	st := spec.Settings
	version, kex := st.Handshakes.Negotiated()
	congestion, ecn := st.TCP.Negotiated()
	resumed, zeroRTT := SessionLabels(records)
	honours := proto.Options(c.Protocol)
	for _, setting := range []struct {
		name  string
		value any
	}{{"tls_version", version}, {"key_exchange", kex}, {"resumption", resumed}, {"zero_rtt", zeroRTT}, {"tcp_congestion", congestion}, {"tcp_ecn", ecn}, {"h1_client", st.H1Client}} {
		if slices.Contains(honours, setting.name) {
			s.Set(setting.name, setting.value)
		} else {
			s.Set(setting.name, "")
		}
	}
	for _, name := range besideColumns {
		s.Set(name, facts[name])
	}
	for _, name := range append(slices.Clone(emulatorFacts), "host_steal_pct", "host_wakeup_p99_us", "host_wakeup_max_us", "overlapping_runs", "server_log_lines") {
		s.Set(name, facts[name])
	}
	return s, nil
}

// sessionLabels reads from the records whether the connections a cell
// opened after its first resumed a TLS session (resumption) and whether
// those that resumed sent 0-RTT data (zero_rtt): true when all did, false
// when none did, "true+false" when some did, "" when there were none to
// tell by (one connection only, or none resumed for zero_rtt).
func SessionLabels(records []results.Record) (resumption, zeroRTT any) {
	resumed, early := map[bool]int{}, map[bool]int{}
	for _, r := range records {
		if !r.OK() || !r.NewConn || r.ConnID < 2 {
			continue
		}
		resumed[r.Resumed]++
		if r.Resumed {
			early[r.EarlyData]++
		}
	}
	return proto.Agreement(resumed), proto.Agreement(early)
}

func counters(d emu.DirectionStats) metrics.Counters {
	p, q := d.Sent, d.Delivered
	return metrics.Counters{RxPackets: d.RxPackets, RxBytes: d.RxBytes, TxPackets: d.TxPackets, TxBytes: d.TxBytes, Drops: d.Drops(),
		DelayMeanMs: p.Mean(), DelayStdMs: p.Std(), DelayStepMs: p.MeanStep(), DelayP50Ms: p.Hist.Quantile(0.5), DelayP99Ms: p.Hist.Quantile(0.99),
		QueuedDelayMeanMs: q.Mean(), QueuedDelayP99Ms: q.Hist.Quantile(0.99)}
}

// lineCounter counts the lines written through it (to w, when set).
type lineCounter struct {
	mu    sync.Mutex
	w     io.Writer
	lines int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines += bytes.Count(p, []byte("\n"))
	if c.w != nil {
		return c.w.Write(p)
	}
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}

// its loss one way.
func PathOf(t testbed.Topology) workload.Path {
	return workload.Path{RTT: t.PathRTT(), Loss: t.PathLoss()}
}
