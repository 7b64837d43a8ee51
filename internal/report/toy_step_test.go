package report_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tlab/internal/analysis"
	"tlab/internal/report"
	"tlab/internal/results"
	"tlab/internal/untrusted"
)

// The toy step proves the seam end to end, from this test file alone: a
// step registered as data (its name, the records column it needs, how it
// computes over the run's view, the file it writes and the section it
// renders) is computed once in a run's analysis, its file written and
// listed, and its section rendered into report.html, with no production
// file edited. It sums a records column no real workload has, toy_weight,
// per cell (the warm-up left out), so it says nothing about any other run.
const toyStep = "toy-weight-report"

// toyComputes counts the toy step's computations (one a run's analysis).
var toyComputes atomic.Int32

type toyWeights struct {
	cells []string
	sums  map[string]float64
}

func init() {
	analysis.Register(analysis.Step{
		Name:    toyStep,
		Doc:     "test only: the toy_weight of each cell's records, summed",
		Columns: []string{"toy_weight"},
		Files:   []string{"toy-weight.csv"},
		Compute: func(v *analysis.View, a *analysis.Analysis) error {
			if !v.HasRecords() {
				return nil
			}
			w := toyWeights{sums: map[string]float64{}}
			err := v.Records([]string{"toy_weight"}, func(r results.RecordRow) error {
				if r.Warmup {
					return nil
				}
				if _, ok := w.sums[r.Cell]; !ok {
					w.cells = append(w.cells, r.Cell)
				}
				w.sums[r.Cell] += r.Values[0]
				return nil
			})
			if errors.Is(err, analysis.ErrNoColumn) {
				return nil // not a toy run
			}
			if err != nil {
				return err
			}
			toyComputes.Add(1)
			a.SetOutput(toyStep, w)
			return nil
		},
		Write: func(a *analysis.Analysis, dir string) ([]string, error) {
			w, ok := a.Output(toyStep).(toyWeights)
			if !ok {
				return nil, nil
			}
			var b strings.Builder
			b.WriteString("cell,weight\n")
			for _, c := range w.cells {
				fmt.Fprintf(&b, "%s,%g\n", c, w.sums[c])
			}
			return []string{"toy-weight.csv"}, os.WriteFile(filepath.Join(dir, "toy-weight.csv"), []byte(b.String()), 0o644)
		},
		Render: func(a *analysis.Analysis) *analysis.Section {
			w, ok := a.Output(toyStep).(toyWeights)
			if !ok {
				return nil
			}
			s := &analysis.Section{Title: "Toy weights", Text: "Each cell's toy_weight, summed <not markup>.", Header: []string{"cell", "weight"}}
			for _, c := range w.cells {
				s.Rows = append(s.Rows, []string{c, fmt.Sprintf("%g", w.sums[c])})
			}
			return s
		},
	})
}

// countingOpen opens as the analysis does (untrusted.Open) and counts
// the opens of each file.
type countingOpen struct{ opens map[string]int }

func (c *countingOpen) open(path string) (io.ReadCloser, error) {
	c.opens[path]++
	return untrusted.Open(path)
}

// toyRun is a run of two cells, a (tcp) and b (quic) on lan, whose
// records have toy_weight, sent_ms and delay_ms, and whose plots include
// the delay CDF.
func toyRun(t *testing.T) *results.Run {
	t.Helper()
	dir := t.TempDir()
	m := &results.Manifest{Format: 2, Scenario: "toy", Seed: 1, Started: time.Now(), Params: []string{}, Plots: []string{"delay_cdf"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	rows := []results.Summary{
		{Cell: "a", Profile: "lan", Protocol: "tcp", Workload: "periodic", Rep: 1},
		{Cell: "b", Profile: "lan", Protocol: "quic", Workload: "periodic", Rep: 1},
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	recs := "cell,warmup,error,sent_ms,delay_ms,toy_weight\n" +
		"a,true,,0,9,100\na,false,,10,1,2\na,false,,20,2,3\n" +
		"b,false,,0,3,0.5\nb,false,,10,4,0\n"
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestAToyStepIsComputedOnceAndRendered: one run's analysis, as the step
// after a sweep makes it (experiment.Analyze), computes the toy step
// once over a view that opens records.csv once, writes its file and
// lists it; the report then renders the toy's section (its text escaped)
// and the delay CDF with records.csv gone: it draws what the analysis
// made, and reads no records of its own. By hand: cell a's measured
// weights 2 + 3 = 5 (its warm-up's 100 left out), b's 0.5 + 0 = 0.5.
func TestAToyStepIsComputedOnceAndRendered(t *testing.T) {
	run := toyRun(t)
	opener := &countingOpen{opens: map[string]int{}}
	before := toyComputes.Load()
	a, err := analysis.OfView(analysis.NewView(run, opener.open), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(run.Dir); err != nil {
		t.Fatal(err)
	}
	recordsPath := filepath.Join(run.Dir, results.RecordsFile)
	if n := opener.opens[recordsPath]; n != 1 {
		t.Errorf("records.csv opened %d times in one run's analysis, want once", n)
	}
	if n := toyComputes.Load() - before; n != 1 {
		t.Errorf("the toy step computed %d times, want once", n)
	}
	if !slices.Contains(a.Files, "toy-weight.csv") {
		t.Errorf("files written %v: the toy step's is not listed", a.Files)
	}
	got, err := os.ReadFile(filepath.Join(run.Dir, "toy-weight.csv"))
	if want := "cell,weight\na,5\nb,0.5\n"; err != nil || string(got) != want {
		t.Errorf("toy-weight.csv = %q, %v; want %q", got, err, want)
	}
	// The report is rendered from the analysis alone.
	if err := os.Remove(recordsPath); err != nil {
		t.Fatal(err)
	}
	path, err := report.Render(run, a)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{
		`<h2 id="step-` + toyStep + `">Toy weights</h2>`,
		"<p>Each cell&#39;s toy_weight, summed &lt;not markup&gt;.</p>",
		`<th class="l">cell</th><th class="l">weight</th>`,
		`<tr><td class="l">a</td><td class="l">5</td></tr>`,
		`<tr><td class="l">b</td><td class="l">0.5</td></tr>`,
		"Delay CDF, lan",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := toyComputes.Load() - before; n != 1 {
		t.Errorf("the toy step computed %d times by the end of the report, want once: the report computes nothing", n)
	}
}
