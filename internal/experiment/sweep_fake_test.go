package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/testbed"
)

// fakeAttempts stands in for RunCell: each attempt emits five records of
// 1–5 ms through the sink and is summarised by the real metrics; release
// says each attempt's emulator release error p99 (µs) by protocol, in
// attempt order; overlap names another live run for a protocol.
type fakeAttempts struct {
	release map[string][]float64
	overlap map[string]bool
	calls   map[string]int
	// cancelAt cancels the sweep during the call for this protocol.
	cancelAt string
	cancel   context.CancelFunc
	failCell map[string]string
}

func (f *fakeAttempts) run(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, _ func(cellrun.Progress)) (cellrun.CellResult, error) {
	p := spec.Cell.Protocol
	f.calls[p]++
	if p == f.cancelAt {
		f.cancel()
		return cellrun.CellResult{}, ctx.Err()
	}
	var recs []results.Record
	for i := range 5 {
		r := results.Record{Seq: i, SentMs: float64(10 * i), DoneMs: float64(10*i + i + 1), DelayMs: float64(i + 1), ReqBytes: 256, RespBytes: 256, ConnID: 1}
		if err := sink(r); err != nil {
			return cellrun.CellResult{}, err
		}
		recs = append(recs, r)
	}
	rel := f.release[p]
	facts := map[string]float64{"emu_release_p99_us": rel[min(f.calls[p], len(rel))-1], "conns_opened": 0}
	res := cellrun.CellResult{Records: recs}
	if f.overlap[p] {
		res.Overlaps = []testbed.LiveRun{{ID: "other", PID: 4242, Label: "tlab run other"}}
	}
	var err error
	res.Summary, err = cellrun.Summarize(spec, spec.Workload.Info(), &cellrun.Place{Emulated: true}, nil, recs, emu.LinkStats{}, facts)
	res.Failed = f.failCell[p]
	res.Summary.Set("cell_error", res.Failed)
	return res, err
}

func fakeScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("fake.yaml", []byte("name: fake\nprofiles: [ethernet]\nprotocols: [tcp, quic, h2]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestSweepBookkeeping runs a sweep's whole bookkeeping on fake attempts,
// without a network: a cell whose first attempt the emulator disturbed is
// run again and its clean attempt reported; a failed cell and one that ran
// beside another run are warned about in the manifest; summaries, records
// and the manifest are written; a resume runs nothing again.
func TestSweepBookkeeping(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	f := &fakeAttempts{
		release:  map[string][]float64{"tcp": {5000, 10}, "quic": {10}, "h2": {8000, 9000, 7000}},
		overlap:  map[string]bool{"quic": true},
		failCell: map[string]string{"h2": "server: refused"},
		calls:    map[string]int{},
	}
	var log strings.Builder
	sw := Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, Log: &log, attempt: f.run}
	rows, err := sw.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	by := map[string]results.Summary{}
	for _, r := range rows {
		by[r.Protocol] = r
	}
	if r := by["tcp"]; r.Int("attempt") != 2 || r.Int("attempts_discarded") != 1 || r.Label("quality") != "clean" || f.calls["tcp"] != 2 {
		t.Errorf("tcp: attempt %d, discarded %d, quality %q, %d calls", r.Int("attempt"), r.Int("attempts_discarded"), r.Label("quality"), f.calls["tcp"])
	}
	// Every attempt disturbed: the least disturbed (the third) is kept,
	// marked.
	if r := by["h2"]; r.Int("attempt") != 3 || f.calls["h2"] != 3 || !strings.HasPrefix(r.Label("quality"), "disturbed: emulator release error p99 7.00 ms") {
		t.Errorf("h2: attempt %d, %d calls, quality %q", r.Int("attempt"), f.calls["h2"], r.Label("quality"))
	}
	if r := by["quic"]; r.Int("attempt") != 1 || r.Int("requests") != 5 || r.Float("delay_p50_ms") != 3 {
		t.Errorf("quic: attempt %d, %d requests, p50 %v", r.Int("attempt"), r.Int("requests"), r.Float("delay_p50_ms"))
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(m.Warnings, "\n")
	for _, want := range []string{"h2 over ethernet) failed: server: refused", "other tlab runs were live (pid 4242"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("manifest warnings lack %q:\n%s", want, warnings)
		}
	}
	if m.Finished == nil || m.Cells != 3 || m.Quality != "normal" {
		t.Errorf("manifest: finished %v, cells %d, quality %q", m.Finished, m.Cells, m.Quality)
	}
	recs, err := os.ReadFile(filepath.Join(dir, results.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	// Every attempt's records are kept: tcp 2, quic 1, h2 3 attempts of 5.
	if n := strings.Count(string(recs), "\n") - 1; n != 30 {
		t.Errorf("records.csv holds %d rows, want 30", n)
	}
	// A resume finds every cell complete and runs nothing.
	again := &fakeAttempts{calls: map[string]int{}}
	sw2 := Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, Resume: true, Log: &log, attempt: again.run}
	rows2, err := sw2.Run(context.Background())
	if err != nil || len(rows2) != 3 || len(again.calls) != 0 {
		t.Errorf("resume: %d rows, calls %v, %v", len(rows2), again.calls, err)
	}
	if !strings.Contains(log.String(), "resumed: 3 of 3 cells were already complete") {
		t.Errorf("log: %s", log.String())
	}
	// A fresh run into the same directory is refused.
	if _, err := (Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, attempt: again.run}).Run(context.Background()); !errors.Is(err, ErrRunExists) {
		t.Errorf("a second run into %s: %v", dir, err)
	}
}

// TestSweepInterruptedKeepsCompleteCells: interrupted in its second cell,
// a sweep keeps the first, leaves the second incomplete, and a resume runs
// the second and the third only.
func TestSweepInterruptedKeepsCompleteCells(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeAttempts{release: map[string][]float64{"tcp": {1}, "quic": {1}, "h2": {1}}, calls: map[string]int{}, cancelAt: "quic", cancel: cancel}
	rows, err := Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, attempt: f.run}.Run(ctx)
	if !errors.Is(err, context.Canceled) || len(rows) != 1 {
		t.Fatalf("interrupted: %d rows, %v", len(rows), err)
	}
	g := &fakeAttempts{release: f.release, calls: map[string]int{}}
	rows, err = Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, Resume: true, attempt: g.run}.Run(context.Background())
	if err != nil || len(rows) != 3 {
		t.Fatalf("resume: %d rows, %v", len(rows), err)
	}
	if g.calls["tcp"] != 0 || g.calls["quic"] != 1 || g.calls["h2"] != 1 {
		t.Errorf("the resume ran %v, want quic and h2 once each", g.calls)
	}
}

// TestCalibrationThatCannotFinishLosesNoRun: an opening calibration that
// fails (a probe timed out on a stalled host) is a warning in the log and
// the manifest, and the cells run; with RequireCalibration it refuses.
func TestCalibrationThatCannotFinishLosesNoRun(t *testing.T) {
	failing := func(context.Context, *results.Manifest, emu.EngineOptions) error {
		return errors.New("delay accuracy: no echo for probe 418")
	}
	dir := filepath.Join(t.TempDir(), "run")
	f := &fakeAttempts{release: map[string][]float64{"tcp": {10}, "quic": {10}, "h2": {10}}, calls: map[string]int{}}
	var log strings.Builder
	rows, err := (&Sweep{Scenario: fakeScenario(t), Dir: dir, Log: &log, attempt: f.run, calibrate: failing}).Run(context.Background())
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(m.Warnings, "\n"); !strings.Contains(w, "could not finish (delay accuracy: no echo for probe 418)") {
		t.Errorf("manifest warnings: %s", w)
	}
	if !strings.Contains(log.String(), "could not finish") {
		t.Errorf("log: %s", log.String())
	}
	strict := &fakeAttempts{release: f.release, calls: map[string]int{}}
	_, err = (&Sweep{Scenario: fakeScenario(t), Dir: filepath.Join(t.TempDir(), "strict"), attempt: strict.run, calibrate: failing, RequireCalibration: true}).Run(context.Background())
	if !errors.Is(err, ErrCalibration) || len(strict.calls) != 0 {
		t.Errorf("with RequireCalibration: %v, cells run %v", err, strict.calls)
	}
}

// TestCalibrationMeasuresTheCellsEngine: a scenario whose emulator: section
// chooses the mmsg engine, sleep mode and read-time arrivals is
// calibrated on exactly those options, and its cells get them too (the
// calibration used to get the mode alone, and measured the ring engine).
func TestCalibrationMeasuresTheCellsEngine(t *testing.T) {
	sc, err := scenario.Parse("e.yaml", []byte("name: e\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\nemulator: {engine: mmsg, mode: sleep, arrival: read, cpu: -1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := emu.EngineOptions{Engine: emu.EngineMmsg, Mode: emu.ModeSleep, Arrival: emu.ArrivalRead, CPU: -1}
	var calibrated emu.EngineOptions
	calibrate := func(_ context.Context, m *results.Manifest, e emu.EngineOptions) error {
		calibrated = e
		m.Calibrations = append(m.Calibrations, &results.Calibration{Verdict: "pass", Engine: e.Engine, Mode: e.Mode})
		return nil
	}
	var cells []emu.EngineOptions
	f := &fakeAttempts{release: map[string][]float64{"tcp": {10}}, calls: map[string]int{}}
	attempt := func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, p func(cellrun.Progress)) (cellrun.CellResult, error) {
		cells = append(cells, spec.Emulator)
		return f.run(ctx, spec, sink, p)
	}
	if _, err := (&Sweep{Scenario: sc, Dir: filepath.Join(t.TempDir(), "run"), attempt: attempt, calibrate: calibrate}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calibrated != want {
		t.Errorf("calibrated on %+v, want %+v", calibrated, want)
	}
	if len(cells) != 1 || cells[0] != want {
		t.Errorf("cells ran on %+v, want %+v", cells, want)
	}
}
