package experiment

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/explore"
	"tlab/internal/results"
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
	ex := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, attempt: flipAttempt(&calls)}
	got, err := ex.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
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
	res, err := Exploration{Resume: dir, NoCalibration: true, attempt: flipAttempt(&again)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again != 0 || res.Map.Cells != m.Cells || len(res.Map.Boundaries) != len(m.Boundaries) {
		t.Errorf("resume ran %d cells, spent %d (first %d), %d boundaries (first %d)", again, res.Map.Cells, m.Cells, len(res.Map.Boundaries), len(m.Boundaries))
	}
}
