package analysis_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/analysis"
	"tlab/internal/results"
)

// The toy step proves the seam: one file registers an analysis step (what
// it reads, how it computes over the run's view, what it writes), and a
// run's analysis computes it, writes its file and lists it, with no other
// change. It sums a records column no real workload has, toy_weight, per
// cell (the warm-up left out), so it says nothing about any other run.
func init() {
	analysis.Register(analysis.Step{
		Name:    "toy-weight",
		Doc:     "test only: the toy_weight of each cell's records, summed",
		Columns: []string{"toy_weight"},
		Files:   []string{"toy-weight.csv"},
		Compute: func(v *analysis.View, a *analysis.Analysis) error {
			if !v.HasRecords() {
				return nil
			}
			sums := map[string]float64{}
			var cells []string
			err := v.Records([]string{"toy_weight"}, func(r results.RecordRow) error {
				if r.Warmup {
					return nil
				}
				if _, ok := sums[r.Cell]; !ok {
					cells = append(cells, r.Cell)
				}
				sums[r.Cell] += r.Values[0]
				return nil
			})
			if errors.Is(err, analysis.ErrNoColumn) {
				return nil // not a toy run
			}
			if err != nil {
				return err
			}
			var b strings.Builder
			b.WriteString("cell,weight\n")
			for _, c := range cells {
				fmt.Fprintf(&b, "%s,%g\n", c, sums[c])
			}
			a.SetOutput("toy-weight", b.String())
			return nil
		},
		Write: func(a *analysis.Analysis, dir string) ([]string, error) {
			out, ok := a.Output("toy-weight").(string)
			if !ok {
				return nil, nil
			}
			return []string{"toy-weight.csv"}, os.WriteFile(filepath.Join(dir, "toy-weight.csv"), []byte(out), 0o644)
		},
	})
}

// TestAToyStepRegistersItself: the toy step is listed among the steps,
// and a run whose records have toy_weight gets toy-weight.csv, written
// and listed among the analysis's files. By hand: cell a's measured
// weights 2 + 3 = 5 (its warm-up 100 left out), cell b's 0.5.
func TestAToyStepRegistersItself(t *testing.T) {
	if !slices.ContainsFunc(analysis.Steps(), func(s analysis.Step) bool { return s.Name == "toy-weight" }) {
		t.Fatal("the toy step is not listed among the steps")
	}
	dir := t.TempDir()
	m := &results.Manifest{Scenario: "toy", Seed: 1, Started: time.Now()}
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
	recs := "cell,warmup,error,delay_ms,toy_weight\na,true,,1,100\na,false,,1,2\na,false,,2,3\nb,false,,3,0.5\n"
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Of(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.Files, "toy-weight.csv") {
		t.Errorf("files written %v: the toy step's is not listed", a.Files)
	}
	got, err := os.ReadFile(filepath.Join(dir, "toy-weight.csv"))
	if want := "cell,weight\na,5\nb,0.5\n"; err != nil || string(got) != want {
		t.Errorf("toy-weight.csv = %q, %v; want %q", got, err, want)
	}
}
