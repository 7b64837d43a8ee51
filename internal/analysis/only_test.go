package analysis

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOnlyComputesAndWritesTheNamedSteps: tlab stats asks for the
// comparisons alone; the run has requirements, a Quality of Outcome
// profile and a load sweep, so a whole analysis would also write
// answers.json and load.csv. Only computes the comparisons and writes
// comparisons.json and .csv, nothing else; an unknown step is an error.
func TestOnlyComputesAndWritesTheNamedSteps(t *testing.T) {
	run := loadRunWithRecords(t)
	a, err := Only(run, ComparisonsStep)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Compared() || len(a.Verdicts) == 0 {
		t.Fatalf("no comparisons: %+v", a.Verdicts)
	}
	if len(a.Load) != 0 || len(a.Answers) != 0 {
		t.Errorf("load %v and answers %v computed, want the comparisons alone", a.Load, a.Answers)
	}
	if err := a.Write(run.Dir); err != nil {
		t.Fatal(err)
	}
	if want := comparisonFiles(ComparisonsFile); !slices.Equal(a.Files, want) {
		t.Errorf("files %v, want %v", a.Files, want)
	}
	for _, f := range []string{AnswersFile, LoadFile + ".csv"} {
		if _, err := os.Stat(filepath.Join(run.Dir, f)); err == nil {
			t.Errorf("%s written by an analysis of the comparisons alone", f)
		}
	}
	if _, err := Only(run, "no-such-step"); err == nil {
		t.Error("an unknown step was analysed")
	}
}
