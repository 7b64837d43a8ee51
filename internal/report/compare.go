package report

import (
	"fmt"

	"tlab/internal/analysis"
	"tlab/internal/results"
)

// RenderComparison renders the report of runs put side by side
// (experiment.Compare gathers them): their merged rows, each tagged with
// its run's name as a swept value "run", in one report in dir. Plots
// that need per-request records (CDFs, time series) stay in each run's
// own report.
func RenderComparison(dir string, names []string, rows []results.Summary, a *analysis.Analysis) (string, error) {
	merged := &Run{Dir: dir, Name: "comparison of " + fmt.Sprint(len(names)) + " runs", Plots: []string{"delay_box", "jitter_bars", "bytes_bars"}, Rows: rows,
		Description: "Runs: " + fmt.Sprint(names) + ". Each plot groups cells by run, then by swept values."}
	return Build(merged, a)
}
