package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"tlab/internal/cellrun"
	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

// TestInSummaryMarksTheRowsTheSummaryUsed: records.csv keeps every
// attempt and the warm-up, so a percentile over all of it is not the
// summary's. Each attempt here emits two warm-up records of 15 ms, then
// ten measured ones; the first attempt (all 12 ms) is disturbed (its
// emulator release error p99 of 5 ms) and run again; the second's delays
// are 1, 2, ..., 9 ms and 40 ms, which the 3-scaled-MAD rule removes
// (median 5.5, MAD 2.5, limit 3 × 1.4826 × 2.5 = 11.1; |40 − 5.5| = 34.5).
// Counted, the warm-up or the first attempt would be kept by that rule
// (|15 − 5.5| and |12 − 5.5| are under 11.1) and raise the p99.
// The summary's p99 is then over 1..9 ms (type 7: h = 8 × 0.99 = 7.92,
// 8 + 0.92 × (9 − 8) = 8.92 ms), and so must be the p99 over the rows
// marked in_summary: nine of them.
func TestInSummaryMarksTheRowsTheSummaryUsed(t *testing.T) {
	sc, err := scenario.Parse("mark.yaml", []byte("name: mark\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 10\nwarmup: 20ms\nmetrics: {remove_outliers: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	fake := func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, _ func(cellrun.Progress)) (cellrun.CellResult, error) {
		calls++
		var recs []results.Record
		emit := func(r results.Record) error {
			recs = append(recs, r)
			return sink(r)
		}
		for i := range 2 {
			if err := emit(results.Record{Seq: i, Warmup: true, DelayMs: 15, DoneMs: 15, ConnID: 1}); err != nil {
				return cellrun.CellResult{}, err
			}
		}
		for i := range 10 {
			d := 12.0
			if calls == 2 {
				d = float64(i + 1)
				if i == 9 {
					d = 40
				}
			}
			if err := emit(results.Record{Seq: 2 + i, SentMs: float64(10 * i), DoneMs: float64(10*i) + d, DelayMs: d, ConnID: 1}); err != nil {
				return cellrun.CellResult{}, err
			}
		}
		release := map[int]float64{1: 5000, 2: 10}[calls]
		res := cellrun.CellResult{Records: recs}
		res.Summary, err = cellrun.Summarize(spec, spec.Workload.Info(), &cellrun.Place{Emulated: true}, nil, recs, emu.LinkStats{},
			map[string]float64{"emu_release_p99_us": release, "conns_opened": 0})
		return res, err
	}
	dir := filepath.Join(t.TempDir(), "run")
	rows, err := Sweep{Scenario: sc, Dir: dir, SkipCalibration: true, attempt: fake}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Int("attempt") != 2 || rows[0].Int("outliers_removed") != 1 {
		t.Fatalf("want one row of attempt 2 with one outlier removed, got %d rows: attempt %d, outliers %d", len(rows), rows[0].Int("attempt"), rows[0].Int("outliers_removed"))
	}
	const want = 8.92
	if got := rows[0].Float("delay_p99_ms"); !(math.Abs(got-want) <= 1e-9) {
		t.Errorf("the summary's p99 is %v, want %v", got, want)
	}
	recs := readCSV(t, filepath.Join(dir, results.RecordsFile))
	mark, delay := slices.Index(recs[0], results.InSummaryColumn), slices.Index(recs[0], "delay_ms")
	if mark != slices.Index(recs[0], "attempt")+1 || delay < 0 {
		t.Fatalf("records.csv's header %v: want in_summary right after attempt", recs[0])
	}
	var used []float64
	for _, r := range recs[1:] {
		if r[mark] == "true" {
			d, err := strconv.ParseFloat(r[delay], 64)
			if err != nil {
				t.Fatal(err)
			}
			used = append(used, d)
		}
	}
	if len(recs)-1 != 24 || len(used) != 9 {
		t.Fatalf("%d records, %d marked: want 24 (two attempts of 12) and 9", len(recs)-1, len(used))
	}
	// The p99 a reader computes over the marked rows (type 7).
	sort.Float64s(used)
	h := float64(len(used)-1) * 0.99
	lo := int(math.Floor(h))
	p99 := used[lo] + (h-float64(lo))*(used[lo+1]-used[lo])
	if !(math.Abs(p99-want) <= 1e-9) {
		t.Errorf("p99 over the rows marked in_summary is %v, want the summary's %v", p99, want)
	}
}

// TestResumeMarksCellsAnOlderTlabCompleted: a run begun by a tlab before
// in_summary has complete cells without the column; resumed, their rows
// are marked (the reported attempt past the warm-up: here attempt 1, its
// five rows), so that the run's records join instead of failing on cells
// of different columns.
func TestResumeMarksCellsAnOlderTlabCompleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	f := &fakeAttempts{release: map[string][]float64{"tcp": {10}, "quic": {10}, "h2": {10}}, calls: map[string]int{}}
	sw := Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, attempt: f.run}
	if _, err := sw.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Make one cell as an older tlab left it: no in_summary column, and
	// the run unfinished (no joined records).
	cells, _ := filepath.Glob(filepath.Join(dir, results.CellsDir, "*"))
	old := filepath.Join(cells[0], results.RecordsFile)
	recs := readCSV(t, old)
	col := slices.Index(recs[0], results.InSummaryColumn)
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(strings.Join(slices.Delete(slices.Clone(r), col, col+1), ",") + "\n")
	}
	if err := os.WriteFile(old, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(cells[0], results.RecordsParquet))
	sw.Resume = true
	if _, err := sw.Run(context.Background()); err != nil {
		t.Fatalf("resuming a run with a cell of an older tlab: %v", err)
	}
	back := readCSV(t, old)
	col = slices.Index(back[0], results.InSummaryColumn)
	marked := 0
	for _, r := range back[1:] {
		if col >= 0 && r[col] == "true" {
			marked++
		}
	}
	if col < 0 || marked != 5 {
		t.Errorf("the older cell's records: in_summary at %d, %d rows marked, want 5", col, marked)
	}
}
