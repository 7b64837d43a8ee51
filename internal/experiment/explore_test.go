package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/explore"
	"tlab/internal/report"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

const fakeExplore = `name: fake-explore
profiles: [ethernet]
protocols: [quic, tcp]
workload: {type: periodic, interval: 10ms}
count: 5
warmup: 0s
require: ["delay_p99_ms<=1000"]
explore:
  parameters:
    link.loss: {range: 0%..10%, resolution: 1%}
  max_repetitions: 6
`

// flipAttempt stands in for RunCell: a cell's delays come from its
// point's loss (quic's fall and tcp's rise with it, crossing at 1.8 %)
// plus noise drawn from the cell's seed (the same for both stacks in a
// repetition, as the emulator's loss pattern is) and a little of each
// stack's own.
func flipAttempt(calls *int) func(context.Context, CellSpec, func(results.Record) error, func(Progress)) (CellResult, error) {
	return func(_ context.Context, spec CellSpec, sink func(results.Record) error, _ func(Progress)) (CellResult, error) {
		*calls++
		loss, _ := strconv.ParseFloat(strings.TrimSuffix(spec.Cell.Params[0].Value, "%"), 64)
		shared := rand.New(rand.NewPCG(spec.Cell.Seed, 1)).NormFloat64() * 2
		own := rand.New(rand.NewPCG(spec.Cell.Seed, uint64(len(spec.Cell.Protocol)))).NormFloat64() * 0.5
		base := 30 + 2.5*(loss-1.8)
		if spec.Cell.Protocol == "quic" {
			base = 30 - 2.5*(loss-1.8)
		}
		var recs []results.Record
		for i := range 5 {
			d := base + shared + own
			r := results.Record{Seq: i, SentMs: float64(10 * i), DoneMs: float64(10*i) + d, DelayMs: d, ReqBytes: 256, RespBytes: 256, ConnID: 1}
			if err := sink(r); err != nil {
				return CellResult{}, err
			}
			recs = append(recs, r)
		}
		res := CellResult{Records: recs}
		var err error
		res.Summary, err = summarize(spec, spec.Workload.Info(), &Place{Emulated: true}, nil, recs, emu.LinkStats{}, map[string]float64{"conns_opened": 1})
		return res, err
	}
}

// An exploration's rounds are ordinary cells of one run directory: the
// summaries hold every cell the map spent, each cell has its directory,
// the map's files sit beside them, the report draws the map, and a
// resume runs no cell again and draws the same map.
func TestAnExplorationIsAnOrdinaryRunDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(file, []byte(fakeExplore), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	calls := 0
	ex := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, Render: report.Render, attempt: flipAttempt(&calls)}
	// Between rounds the map so far is on disk, its plot listed: the live
	// view draws it as it grows.
	var midway error
	ex.Round = func(round int, _ []explore.Request) {
		if round != 2 {
			return
		}
		if _, err := os.Stat(filepath.Join(dir, explore.MapFile)); err != nil {
			midway = err
		} else if mf, err := results.ReadManifest(dir); err != nil || !slices.Contains(mf.Plots, ExplorePlot) {
			midway = fmt.Errorf("manifest plots lack %s (%v)", ExplorePlot, err)
		}
	}
	got, err := ex.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if midway != nil {
		t.Errorf("after the first round: %v", midway)
	}
	m := got.Map
	t.Logf("%d points, %d cells, %d rounds\n%s", len(m.Points), m.Cells, m.Rounds, m.Answer())
	if calls != m.Cells {
		t.Errorf("%d cells run, the map says it spent %d", calls, m.Cells)
	}
	run, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Rows) != m.Cells {
		t.Errorf("summary holds %d rows, the map spent %d cells", len(run.Rows), m.Cells)
	}
	// The manifest counts every cell (the live view's progress), and a
	// round is no resume.
	if mf, err := results.ReadManifest(dir); err != nil || mf.Cells != m.Cells || len(mf.Resumed) != 0 {
		t.Errorf("manifest: %d cells (want %d), %d resumes (want 0), %v", mf.Cells, m.Cells, len(mf.Resumed), err)
	}
	for _, r := range run.Rows {
		if !results.CellDone(results.CellDir(dir, r.Cell)) || r.Param("link.loss") == "" {
			t.Errorf("row %s: no complete cell directory, or no link.loss column (%q)", r.Cell, r.Param("link.loss"))
		}
	}
	for _, f := range []string{explore.PointsFile, explore.VerdictsFile, explore.BoundariesFile, explore.MapFile, explore.AnswerFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run lacks %s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, explore.BoundariesFile))
	if !strings.Contains(string(b), "quic vs tcp on delay_p99_ms,pair") {
		t.Errorf("no quic/tcp boundary in %s:\n%s", explore.BoundariesFile, b)
	}
	if got.Report == "" {
		t.Errorf("no report")
	}
	if _, err := os.Stat(filepath.Join(dir, "plots", ExplorePlot+"-1-ethernet.svg")); err != nil {
		entries, _ := os.ReadDir(filepath.Join(dir, "plots"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the report draws no map: %v (plots: %v)", err, names)
	}
	// A resume asks for the same cells, finds them done, runs none.
	again := 0
	res, err := Exploration{Resume: dir, NoCalibration: true, Render: report.Render, attempt: flipAttempt(&again)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again != 0 || res.Map.Cells != m.Cells || len(res.Map.Boundaries) != len(m.Boundaries) {
		t.Errorf("resume ran %d cells, spent %d (first %d), %d boundaries (first %d)", again, res.Map.Cells, m.Cells, len(res.Map.Boundaries), len(m.Boundaries))
	}
}

// A tiny real exploration, end to end: quic and tcp through the emulated
// link in namespaces, over 0 % to 4 % loss, a budget of 12 cells. The
// run directory holds ordinary complete cells (as many as the map spent,
// within the budget) and the map's files, and the answer says what stayed
// open.
func TestATinyRealExploration(t *testing.T) {
	requireRoot(t)
	file := filepath.Join(t.TempDir(), "tiny.yaml")
	src := `name: tiny-explore
profiles: [ethernet]
link: {rtt: 10ms}
protocols: [quic, tcp]
workload: {type: periodic, interval: 10ms, payload: 256}
count: 40
warmup: 0s
require: ["delay_p99_ms<=30"]
explore:
  parameters:
    link.loss: 0%..4%
  coarse: 2
  max_repetitions: 3
  budget: 12
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, Quality: "off", Render: report.Render}.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(got.Map.Answer())
	if got.Map.Cells == 0 || got.Map.Cells > 12 {
		t.Errorf("the map spent %d cells; the budget is 12", got.Map.Cells)
	}
	run, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Rows) != got.Map.Cells {
		t.Errorf("%d rows in summary.csv, %d cells spent", len(run.Rows), got.Map.Cells)
	}
	for _, r := range run.Rows {
		// A busy host may leave requests unsent; a cell that measured
		// none would be no cell at all.
		if !results.CellDone(results.CellDir(dir, r.Cell)) || r.Int("requests") < 1 {
			t.Errorf("cell %s: not complete, or no request completed (%d)", r.Cell, r.Int("requests"))
		}
	}
	for _, f := range []string{explore.PointsFile, explore.BoundariesFile, explore.MapFile, "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run lacks %s: %v", f, err)
		}
	}
	if got.Map.Stopped == "budget" && len(got.Map.Open) == 0 {
		t.Errorf("the budget ran out and nothing is said to be open:\n%s", got.Map.Answer())
	}
}

// repetitions: auto repeats a point only while a verdict there is open: a
// clear difference (quic 20 ms below tcp at every loss, with noise) is
// decided before the maximum, and two names for one stack are repeated up
// to it, undecided. The extra repetitions are ordinary cells named after
// their first repetition's.
func TestAutoRepetitionsStopWhenDecided(t *testing.T) {
	src := `name: auto
profiles: [ethernet]
protocols: [quic, tcp, h2]
workload: {type: periodic, interval: 10ms}
count: 5
warmup: 0s
repetitions: auto
max_repetitions: 9
require: ["delay_p99_ms<=1000"]
`
	sc, err := scenario.Parse("auto.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if maxReps, ok := sc.AutoRepetitions(); !ok || maxReps != 9 || sc.Repetitions != 2 {
		t.Fatalf("auto %v, max %d, first repetitions %d", ok, maxReps, sc.Repetitions)
	}
	// quic is 20 ms faster than tcp; h2 is tcp under another name.
	attempt := func(_ context.Context, spec CellSpec, sink func(results.Record) error, _ func(Progress)) (CellResult, error) {
		shared := rand.New(rand.NewPCG(spec.Cell.Seed, 1)).NormFloat64() * 3
		own := rand.New(rand.NewPCG(spec.Cell.Seed, uint64(len(spec.Cell.Protocol)))).NormFloat64()
		base := 50.0
		if spec.Cell.Protocol == "quic" {
			base = 30
		}
		var recs []results.Record
		for i := range 5 {
			d := base + shared + own
			r := results.Record{Seq: i, SentMs: float64(10 * i), DoneMs: float64(10*i) + d, DelayMs: d, ReqBytes: 256, RespBytes: 256, ConnID: 1}
			if err := sink(r); err != nil {
				return CellResult{}, err
			}
			recs = append(recs, r)
		}
		res := CellResult{Records: recs}
		res.Summary, err = summarize(spec, spec.Workload.Info(), &Place{Emulated: true}, nil, recs, emu.LinkStats{}, map[string]float64{"conns_opened": 1})
		return res, err
	}
	cells, err := sc.Cells()
	if err != nil {
		t.Fatal(err)
	}
	reqs := sc.Requirements()
	sw := Sweep{Scenario: sc, Dir: filepath.Join(t.TempDir(), "run"), SkipCalibration: true, Quality: Quality{Mode: "off"}, attempt: attempt, Requirements: reqs}
	rows, err := sw.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows, err = sw.repeatUntilDecided(context.Background(), cells, 9, rows)
	if err != nil {
		t.Fatal(err)
	}
	// tcp and h2 cannot be told apart, so the point goes to the maximum:
	// 9 repetitions of 3 stacks. Meanwhile quic against tcp and h2 (a
	// 20 ms gap over a spread of about 1.4 ms between stacks) is decided.
	if len(rows) != 27 {
		t.Errorf("%d rows, want 27 (9 repetitions of 3 stacks: tcp and h2 stay undecided)", len(rows))
	}
	// Without h2, the same point is decided before the maximum: the t
	// mixture with a 20 ms gap over ~1.4 ms of spread reaches 1/alpha
	// (3 comparisons: 60) within 6 repetitions (at n = 5 without any
	// spread it is 21² = 441), and the first round already has 2.
	two, err := scenario.Parse("auto.yaml", []byte(strings.Replace(src, "[quic, tcp, h2]", "[quic, tcp]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	twoCells, _ := two.Cells()
	sw2 := Sweep{Scenario: two, Dir: filepath.Join(t.TempDir(), "run"), SkipCalibration: true, Quality: Quality{Mode: "off"}, attempt: attempt, Requirements: reqs}
	rows2, err := sw2.Run(context.Background())
	if err == nil {
		rows2, err = sw2.repeatUntilDecided(context.Background(), twoCells, 9, rows2)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows2) / 2; n < 2 || n > 6 {
		t.Errorf("quic against tcp took %d repetitions, want 2 to 6 (decided before the maximum of 9)", n)
	}
	var seq []map[string]map[string]float64
	byRep := map[int]map[string]map[string]float64{}
	for _, r := range rows {
		if byRep[r.Rep] == nil {
			byRep[r.Rep] = map[string]map[string]float64{}
		}
		byRep[r.Rep][r.Protocol] = map[string]float64{"delay_p99_ms": r.Float("delay_p99_ms")}
		if r.Rep == 9 && r.Protocol == "quic" && r.Cell != "c0001_ethernet_quic_r9" {
			t.Errorf("the ninth repetition of quic is cell %s, want c0001_ethernet_quic_r9", r.Cell)
		}
	}
	for rep := 1; rep <= 9; rep++ {
		seq = append(seq, byRep[rep])
	}
	for _, c := range explore.Comparisons(sc.Protocols, reqs) {
		v := c.Judge(seq, explore.TMixture, autoAlpha, len(explore.Comparisons(sc.Protocols, reqs)))
		want := "quic"
		switch {
		case c.Kind == explore.RequirementKind:
			want = "meets"
		case c.A == "tcp" && c.B == "h2":
			want = explore.Undecided
		}
		if v.Label != want {
			t.Errorf("%s: %s, want %s", c.Name(), v.Label, want)
		}
	}
}
