package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/emu"
	"tlab/internal/explore"
	"tlab/internal/metrics"
	"tlab/internal/plan"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// ExplorePlot is the report's plot of an exploration's map (package
// report's explore_map): added to the run's plots when the map is written.
const ExplorePlot = "explore_map"

// Exploration is one `tlab explore`: a scenario's explore: section
// searched round by round, each round a batch of ordinary cells run by
// the sweep into one run directory (so that tlab report, tlab stats and a
// resume work on it), then the map's files, the analysis and the report.
type Exploration struct {
	// The scenario, a file or preset with Sets; or Resume, a run
	// directory of an exploration to continue (its done cells are read
	// back, and the search, being deterministic, asks for them again).
	NameOrFile string
	Sets       []string
	Resume     string
	// Out is the run directory (empty: DefaultDir).
	Out string
	// Budget, when set, replaces the section's.
	Budget *explore.Budget

	NoCalibration, NoReport bool
	// NoWhy leaves the boundaries unexplained: by default each is
	// re-measured with one impairment removed at a time (ablation/),
	// within what the budget leaves after the map.
	NoWhy bool
	// Render renders the report (report.Render; nil: none).
	Render Renderer
	// Rounds, when set, runs each round's new cells elsewhere (a Slurm
	// array, a Kubernetes Indexed Job: explore_rounds.go) and merges them
	// into the run directory; nil runs them here.
	Rounds RoundRunner
	// Quality is the rule that re-runs disturbed cells (as Run's).
	Quality  string
	Progress func(cellrun.Progress)
	Log      io.Writer
	// Ready is called once the scenario and directory are known, before
	// any cell runs (the command line checks privileges there).
	Ready func(ExploreReady) error
	// Round hears each round's points before they are measured.
	Round func(round int, reqs []explore.Request)
	Now   func() time.Time

	// attempt and calibrate replace RunCell and the calibration in tests.
	attempt   func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, progress func(cellrun.Progress)) (cellrun.CellResult, error)
	calibrate func(ctx context.Context, m *results.Manifest, emulator emu.EngineOptions) error
}

// ExploreReady is what an exploration is about to do.
type ExploreReady struct {
	Scenario *scenario.Scenario
	Config   explore.Config
	Dir      string
}

// Explored is what an exploration did.
type Explored struct {
	Scenario *scenario.Scenario
	Map      *explore.Map
	Dir      string
	Report   string
}

// Execute searches the range and writes the run directory.
func (e Exploration) Execute(ctx context.Context) (Explored, error) {
	if e.Now == nil {
		e.Now = time.Now
	}
	start := e.Now()
	var sc *scenario.Scenario
	var err error
	if e.Resume != "" {
		if e.NameOrFile != "" || len(e.Sets) > 0 {
			return Explored{}, cellrun.InputErr(errors.New("--resume DIR continues the exploration's own scenario; give no file and no --set"))
		}
		sc, err = OpenResume(e.Resume)
	} else {
		sc, err = LoadScenario(e.NameOrFile, e.Sets)
	}
	if err != nil {
		return Explored{}, cellrun.InputErr(err)
	}
	spec, err := explore.SpecOf(sc)
	if err != nil {
		return Explored{}, cellrun.InputErr(err)
	}
	if e.Quality != "" && !slices.Contains(cellrun.QualityModes, e.Quality) {
		return Explored{}, cellrun.InputErr(fmt.Errorf("--quality %q: want %s", e.Quality, strings.Join(cellrun.QualityModes, ", ")))
	}
	if e.Budget != nil {
		spec.Budget = *e.Budget
	}
	reqs := advise.RequirementsOf(sc)
	cfg := spec.Config(sc.Protocols, reqs)
	cfg.Round = e.Round
	if !e.NoWhy {
		// Kept before the search: the map's level may not depend on it.
		cfg.WhyShare = explore.DefaultWhyShare
	}
	cfg.Evidence = evidenceFor(sc.WorkloadSpec().Info())
	cfg.Floor = floorAt(sc)
	out := Explored{Scenario: sc, Dir: e.Out}
	switch {
	case e.Resume != "":
		out.Dir = e.Resume
	case out.Dir == "":
		out.Dir = DefaultDir(sc.Name, e.Now())
	}
	cfg.AfterRound = func(m *explore.Map) {
		// The map so far, for the live view (tlab serve DIR): its files
		// and its plot in the run's list. A failure here loses nothing
		// the end does not write again.
		if err := m.WriteFiles(out.Dir); err != nil && e.Log != nil {
			fmt.Fprintf(e.Log, "warning: the map so far: %v\n", err)
		}
		addExplorePlot(out.Dir)
	}
	if e.Ready != nil {
		if err := e.Ready(ExploreReady{Scenario: sc, Config: cfg, Dir: out.Dir}); err != nil {
			return out, err
		}
	}
	if e.Resume == "" {
		if _, err := os.Stat(filepath.Join(out.Dir, results.ScenarioFile)); err == nil {
			return out, cellrun.InputErr(fmt.Errorf("%s: %w; continue it with --resume %s or choose another --out", out.Dir, ErrRunExists, out.Dir))
		}
	}
	sweepDeadRuns(e.Log)
	m := &cellMeasurer{scenario: sc, runner: e.Rounds, sweep: Sweep{Scenario: sc, Dir: out.Dir, Resume: e.Resume != "", SkipCalibration: e.NoCalibration,
		Requirements: reqs, Progress: e.Progress, Log: e.Log, Quality: cellrun.Quality{Mode: e.Quality}, attempt: e.attempt, calibrate: e.calibrate}}
	if p, ok := qoo.ProfileOf(sc); ok {
		m.sweep.QoO = &p
	}
	out.Map, err = explore.Run(ctx, cfg, m)
	if out.Map == nil || m.rounds == 0 {
		return out, err
	}
	if err == nil && !e.NoWhy && len(out.Map.Boundaries) > 0 {
		err = e.explain(ctx, sc, out.Map, cfg, out.Dir, m.sweep, start)
		if err != nil {
			err = fmt.Errorf("why: %w", err)
		}
	}
	if werr := out.Map.WriteFiles(out.Dir); werr != nil {
		return out, errors.Join(err, fmt.Errorf("writing the map: %w", werr))
	}
	if merr := addExplorePlot(out.Dir); merr != nil {
		return out, errors.Join(err, merr)
	}
	if err != nil {
		return out, err
	}
	render := e.Render
	if e.NoReport {
		render = nil
	}
	done, err := Analyze(out.Dir, reqs, render)
	out.Report = done.Report
	return out, err
}

// exploreEvidence are the figures each boundary shows on either side, as
// the records' account of what changed there: for request-response
// workloads connections opened, bytes on the wire per request
// (retransmissions and handshakes add to them), sends behind schedule
// and never sent, the sender's lateness (its 99th percentile: a stack
// that cannot multiplex makes the next send wait); for publish/subscribe
// the bytes on the wire per message (retransmissions and handshakes
// again), the messages that did not arrive, the reconnections' Δ+ and
// the share of new connections that resumed a session or sent 0-RTT;
// for every workload the messages that failed and the emulator's own
// release error (a host disturbance, not the network). A cell has those
// its workload computes (evidenceFor).
var exploreEvidence = []string{"conns_per_1000", "bytes_per_request", "late_sends", "unsent", "lateness_p99_ms",
	"wire_bytes_per_message", "messages_failed", "reconnect_ms", "resumed", "used_0rtt",
	"failed_pct", "emu_release_p99_us"}

// evidenceFor are the evidence figures a workload's cells have: those
// among exploreEvidence it computes (Info.Metrics) and the emulator's own
// (instrument figures, every cell's), so that a boundary's account holds
// no figure of another kind of workload.
func evidenceFor(info workload.Info) []string {
	var out []string
	for _, f := range exploreEvidence {
		m, ok := metrics.Lookup(f)
		if slices.Contains(info.Metrics, f) || ok && m.Kind == metrics.Instrument {
			out = append(out, f)
		}
	}
	return out
}

// cellMeasurer runs an exploration's rounds as cells of one run
// directory: each request is one cell per protocol at the point's values
// (plan.CompileAt, the repetition's seed), and every round's sweep holds
// the cells of the rounds before (done: read back, not run again), so
// that summary.csv and records.csv hold the whole exploration.
type cellMeasurer struct {
	scenario *scenario.Scenario
	sweep    Sweep
	// runner, when set, runs the round's new cells elsewhere first.
	runner RoundRunner
	cells  []plan.Cell
	have   map[string]bool
	rounds int
}

func (m *cellMeasurer) Measure(ctx context.Context, reqs []explore.Request) ([]explore.Outcome, error) {
	sc := m.scenario
	if m.have == nil {
		m.have = map[string]bool{}
	}
	ids := make([]map[string]string, len(reqs)) // protocol → cell id, per request
	for i, r := range reqs {
		var params []results.Param
		for _, s := range r.Point.Settings {
			params = append(params, results.Param{Key: s.Path, Value: s.Value})
		}
		ids[i] = map[string]string{}
		for _, p := range sc.Protocols {
			c, err := plan.CompileAt(sc, sc.Profiles[0], p, r.Rep, params)
			if err != nil {
				return nil, cellrun.InputErr(fmt.Errorf("point %s: %w", r.Point.Label(), err))
			}
			ids[i][p] = c.ID
			if !m.have[c.ID] {
				m.have[c.ID] = true
				m.cells = append(m.cells, c)
			}
		}
	}
	var warnings []string // the round's tasks', for the manifest
	if m.runner != nil {
		var pending []plan.Cell
		for _, c := range m.cells {
			if !results.CellDone(results.CellDir(m.sweep.Dir, c.ID)) {
				pending = append(pending, c)
			}
		}
		if len(pending) > 0 {
			var err error
			if warnings, err = dispatch(ctx, m.runner, sc, m.sweep, pending); err != nil {
				return nil, err
			}
		}
	}
	sw := m.sweep
	sw.Cells = m.cells
	if m.rounds > 0 {
		// The run directory exists: continue it, without another
		// opening calibration.
		sw.Resume, sw.SkipCalibration, sw.nextRound = true, true, true
	}
	m.rounds++
	rows, err := sw.Run(ctx)
	if len(warnings) > 0 {
		if mf, merr := results.ReadManifest(sw.Dir); merr == nil {
			mf.Warnings = append(mf.Warnings, warnings...)
			err = errors.Join(err, mf.Save(sw.Dir))
		}
	}
	byID := map[string]results.Summary{}
	for _, r := range rows {
		byID[r.Cell] = r
	}
	var out []explore.Outcome
	for i, r := range reqs {
		o := explore.Outcome{Request: r, Values: map[string]map[string]float64{}}
		complete := true
		for p, id := range ids[i] {
			row, ok := byID[id]
			if !ok {
				complete = false
				break
			}
			o.Values[p] = map[string]float64{}
			for _, f := range row.Fields {
				o.Values[p][f.Name] = row.Float(f.Name)
			}
		}
		if complete {
			out = append(out, o)
		}
	}
	return out, err
}

// floorAt is the exploration's floor: a point's cell for the stack,
// compiled as its repetitions are (the links do not depend on the
// repetition), asked for the metric's floor (plan.Cell.Floor). A point
// that does not compile has none (its measurement reports why).
func floorAt(sc *scenario.Scenario) func(explore.Point, string, string) (float64, bool) {
	return func(pt explore.Point, stack, metric string) (float64, bool) {
		var params []results.Param
		for _, s := range pt.Settings {
			params = append(params, results.Param{Key: s.Path, Value: s.Value})
		}
		c, err := plan.CompileAt(sc, sc.Profiles[0], stack, 1, params)
		if err != nil {
			return 0, false
		}
		return c.Floor(metric)
	}
}

// addExplorePlot puts the map's plot first in the run's plots, once.
func addExplorePlot(dir string) error {
	mf, err := results.ReadManifest(dir)
	if err != nil || slices.Contains(mf.Plots, ExplorePlot) {
		return nil
	}
	mf.Plots = append([]string{ExplorePlot}, mf.Plots...)
	return mf.Save(dir)
}
