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
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/emu"
	"tlab/internal/explore"
	"tlab/internal/plan"
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
func flipAttempt(calls *int) func(context.Context, cellrun.CellSpec, func(results.Record) error, func(cellrun.Progress)) (cellrun.CellResult, error) {
	return func(_ context.Context, spec cellrun.CellSpec, sink func(results.Record) error, _ func(cellrun.Progress)) (cellrun.CellResult, error) {
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
				return cellrun.CellResult{}, err
			}
			recs = append(recs, r)
		}
		res := cellrun.CellResult{Records: recs}
		var err error
		res.Summary, err = cellrun.Summarize(spec, spec.Workload.Info(), &cellrun.Place{Emulated: true}, nil, recs, emu.LinkStats{}, map[string]float64{"conns_opened": 1})
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
	// The why has its own test (TestTheWhyRunsEachRemovalAsItsOwnRun).
	ex := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoWhy: true, Render: report.Render, attempt: flipAttempt(&calls)}
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
	res, err := Exploration{Resume: dir, NoCalibration: true, NoWhy: true, Render: report.Render, attempt: flipAttempt(&again)}.Execute(context.Background())
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
	attempt := func(_ context.Context, spec cellrun.CellSpec, sink func(results.Record) error, _ func(cellrun.Progress)) (cellrun.CellResult, error) {
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
				return cellrun.CellResult{}, err
			}
			recs = append(recs, r)
		}
		res := cellrun.CellResult{Records: recs}
		res.Summary, err = cellrun.Summarize(spec, spec.Workload.Info(), &cellrun.Place{Emulated: true}, nil, recs, emu.LinkStats{}, map[string]float64{"conns_opened": 1})
		return res, err
	}
	cells, err := plan.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	reqs := advise.RequirementsOf(sc)
	sw := Sweep{Scenario: sc, Dir: filepath.Join(t.TempDir(), "run"), SkipCalibration: true, Quality: cellrun.Quality{Mode: "off"}, attempt: attempt, Requirements: reqs}
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
	twoCells, _ := plan.Compile(two)
	sw2 := Sweep{Scenario: two, Dir: filepath.Join(t.TempDir(), "run"), SkipCalibration: true, Quality: cellrun.Quality{Mode: "off"}, attempt: attempt, Requirements: reqs}
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

// jitterFlipAttempt is flipAttempt on a link with jitter, where the flip
// is jitter's: a cell with link.jitter=0ms among its fields has quic 5 ms
// faster than tcp at every loss (no flip). seeds hears each cell's seed
// by its point's loss and repetition, per run (map or removal).
func jitterFlipAttempt(calls *int, seeds map[string]uint64) func(context.Context, cellrun.CellSpec, func(results.Record) error, func(cellrun.Progress)) (cellrun.CellResult, error) {
	flip := flipAttempt(calls)
	return func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, p func(cellrun.Progress)) (cellrun.CellResult, error) {
		noJitter := slices.Contains(spec.Cell.Params, results.Param{Key: "link.jitter", Value: "0ms"})
		seeds[fmt.Sprintf("%s r%d %v", spec.Cell.Params[0].Value, spec.Cell.Rep, noJitter)] = spec.Cell.Seed
		if !noJitter {
			return flip(ctx, spec, sink, p)
		}
		// quic 25 ms, tcp 30 ms, the same noise as flipAttempt's.
		*calls++
		shared := rand.New(rand.NewPCG(spec.Cell.Seed, 1)).NormFloat64() * 2
		own := rand.New(rand.NewPCG(spec.Cell.Seed, uint64(len(spec.Cell.Protocol)))).NormFloat64() * 0.5
		d := 30 + shared + own
		if spec.Cell.Protocol == "quic" {
			d -= 5
		}
		var recs []results.Record
		for i := range 5 {
			r := results.Record{Seq: i, SentMs: float64(10 * i), DoneMs: float64(10*i) + d, DelayMs: d, ReqBytes: 256, RespBytes: 256, ConnID: 1}
			if err := sink(r); err != nil {
				return cellrun.CellResult{}, err
			}
			recs = append(recs, r)
		}
		res := cellrun.CellResult{Records: recs}
		var err error
		res.Summary, err = cellrun.Summarize(spec, spec.Workload.Info(), &cellrun.Place{Emulated: true}, nil, recs, emu.LinkStats{}, map[string]float64{"conns_opened": 1})
		return res, err
	}
}

// The why, end to end through the sweep: on a link with jitter whose
// quic/tcp flip jitter makes, the boundary's neighbours are measured
// again without jitter in ablation/no-jitter/ (an ordinary run directory:
// its own summaries, records with a link.jitter column, its analysis and
// a report), with the map's seeds; so are they without the ethernet
// profile's rate limit (no queue: it stays); no loss is the explored
// parameter, not measured. explore-why.csv and the answer say jitter; a
// resume runs nothing again; --no-why measures nothing more than the map.
func TestTheWhyRunsEachRemovalAsItsOwnRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	src := strings.Replace(fakeExplore, "protocols:", "link: {jitter: 5ms}\nprotocols:", 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	calls := 0
	seeds := map[string]uint64{}
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoReport: true, attempt: jitterFlipAttempt(&calls, seeds)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := got.Map
	t.Log(m.Answer())
	if m.Why == nil || len(m.Why.Whys) == 0 {
		t.Fatalf("no why:\n%s", m.Answer())
	}
	if calls != m.Cells+m.Why.Cells || m.Why.Cells == 0 {
		t.Errorf("%d cells run; the map spent %d, the ablations %d", calls, m.Cells, m.Why.Cells)
	}
	pair := -1
	for i, w := range m.Why.Whys {
		if m.Comparisons[w.Boundary.Comparison].Kind == explore.PairKind {
			pair = i
		}
	}
	if pair < 0 {
		t.Fatalf("no pair boundary explained:\n%s", m.Answer())
	}
	if w := m.Why.Whys[pair]; strings.Join(w.Mechanism, "+") != "jitter" || !strings.Contains(m.Answer(), "is jitter's") {
		t.Errorf("the quic/tcp boundary's mechanism %v, want jitter: %s", w.Mechanism, w.Says)
	}
	ab := filepath.Join(dir, AblationDir, "no-jitter")
	run, err := results.Open(ab)
	if err != nil {
		t.Fatalf("the removal's run: %v", err)
	}
	nq, err := results.Open(filepath.Join(dir, AblationDir, "no-queue"))
	if err != nil {
		t.Fatalf("the no-queue run: %v", err)
	}
	// The fake cells ignore the stacks' settings: resuming every
	// handshake (quic's 0-RTT) leaves the flip.
	nh, err := results.Open(filepath.Join(dir, AblationDir, "no-handshakes"))
	if err != nil {
		t.Fatalf("the no-handshakes run: %v", err)
	}
	if len(run.Rows)+len(nq.Rows)+len(nh.Rows) != m.Why.Cells {
		t.Errorf("the removals' runs hold %d + %d + %d rows; the ablations spent %d cells", len(run.Rows), len(nq.Rows), len(nh.Rows), m.Why.Cells)
	}
	if r := m.Why.Whys[pair].Removals; len(r) != 4 || r[0].Moved != explore.MovedExplored || r[1].Moved != explore.MovedYes || r[2].Moved != explore.MovedNo || r[3].Moved != explore.MovedNo {
		t.Errorf("removals: %+v; want no loss explored, no jitter moved, no queue and no handshakes not", r)
	}
	for _, r := range run.Rows {
		if r.Param("link.jitter") != "0ms" || r.Param("link.loss") == "" || !results.CellDone(results.CellDir(ab, r.Cell)) {
			t.Errorf("row %s: link.jitter %q, link.loss %q, or no complete cell", r.Cell, r.Param("link.jitter"), r.Param("link.loss"))
		}
	}
	same := 0
	for k, s := range seeds {
		if strings.HasSuffix(k, " true") {
			if before, ok := seeds[strings.TrimSuffix(k, " true")+" false"]; ok {
				same++
				if before != s {
					t.Errorf("%s: seed %d without jitter, %d in the map", k, s, before)
				}
			}
		}
	}
	if same == 0 {
		t.Errorf("no removal cell shares a point and repetition with the map's")
	}
	if _, err := os.Stat(filepath.Join(dir, AblationDir, "no-loss")); err == nil {
		t.Errorf("no loss was measured: it is the explored parameter")
	}
	if _, err := os.Stat(filepath.Join(ab, analysis.AnswersFile)); err != nil {
		entries, _ := os.ReadDir(ab)
		t.Errorf("the removal's run has no analysis: %v (%d entries)", err, len(entries))
	}
	if rep, err := Analyze(ab, nil, report.Render); err != nil || rep.Report == "" {
		t.Errorf("tlab report on the removal's run: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, explore.WhyFile))
	if err != nil || !strings.Contains(string(b), ",jitter,") || !strings.Contains(string(b), "no jitter") {
		t.Errorf("%s: %v\n%s", explore.WhyFile, err, b)
	}
	again := 0
	res, err := Exploration{Resume: dir, NoCalibration: true, NoReport: true, attempt: jitterFlipAttempt(&again, map[string]uint64{})}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again != 0 || res.Map.Why == nil || res.Map.Why.Whys[pair].Says != m.Why.Whys[pair].Says {
		t.Errorf("resume ran %d cells; why %q, first %q", again, res.Map.Why.Whys[pair].Says, m.Why.Whys[pair].Says)
	}
	dir2 := filepath.Join(t.TempDir(), "run")
	calls = 0
	got, err = Exploration{NameOrFile: file, Out: dir2, NoCalibration: true, NoReport: true, NoWhy: true, attempt: jitterFlipAttempt(&calls, map[string]uint64{})}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir2, AblationDir)); err == nil || calls != got.Map.Cells || got.Map.Why != nil {
		t.Errorf("--no-why: %d cells for a map of %d, ablation dir: %v", calls, got.Map.Cells, err)
	}
	// A budget of the map's cells and 4 more: the ablations get 4 (two
	// repetitions of the two stacks), too few to decide anything, and
	// attribute nothing.
	calls = 0
	bud := explore.Budget{Cells: got.Map.Cells + 4}
	got, err = Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "run"), NoCalibration: true, NoReport: true, Budget: &bud,
		attempt: jitterFlipAttempt(&calls, map[string]uint64{})}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := got.Map.Why; w == nil || w.Cells > 4 || calls > bud.Cells || w.Stopped != "budget" || len(w.Whys[pair].Mechanism) != 0 {
		t.Errorf("budget %d: %d cells run; the why: %v", bud.Cells, calls, w != nil)
		if w != nil {
			t.Logf("ablations spent %d, stopped %s: %s", w.Cells, w.Stopped, w.Whys[pair].Says)
		}
	}
}
