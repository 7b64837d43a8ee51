package report

import (
	"fmt"
	"path/filepath"
	"slices"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/qoo"
	"tlab/internal/results"
)

// Compare puts several runs side by side: their rows, each tagged with its
// run's name as a swept value "run", go into one summary and one report in
// out. Plots that need per-request records (CDFs, time series) stay in each
// run's own report.
//
// requirements ("METRIC OP BOUND" each, the first the priority) are
// answered on every run's every network, and the report says which
// stacks meet them on all of them; without any, the runs' own are used
// when every run states the same.
func Compare(dirs []string, out string, requirements []advise.Requirement, profile *qoo.Profile) (*Run, *analysis.Analysis, string, error) {
	merged := &Run{Dir: out, Name: "comparison of " + fmt.Sprint(len(dirs)) + " runs", Plots: []string{"delay_box", "jitter_bars", "bytes_bars"}}
	var names []string
	var runs []analysis.NamedRun
	for _, d := range dirs {
		r, err := results.Open(d)
		if err != nil {
			return nil, nil, "", fmt.Errorf("report: %w", err)
		}
		name := filepath.Base(filepath.Clean(d))
		for slices.Contains(names, name) {
			name += "'"
		}
		names = append(names, name)
		runs = append(runs, analysis.NamedRun{Name: name, Given: d, Run: r})
		for _, row := range r.Rows {
			row.Params = append([]results.Param{{Key: "run", Value: name}}, row.Params...)
			row.Cell = name + "/" + row.Cell
			merged.Rows = append(merged.Rows, row)
		}
	}
	merged.Description = "Runs: " + fmt.Sprint(names) + ". Each plot groups cells by run, then by swept values."
	if err := results.PrepareOut(out); err != nil {
		return nil, nil, "", err
	}
	if err := results.WriteSummaries(out, merged.Rows); err != nil {
		return nil, nil, "", err
	}
	// What the runs say side by side is the analysis's; the report
	// renders it.
	a, err := analysis.OfRuns(runs, merged.Rows, requirements, profile)
	if err != nil {
		return nil, nil, "", err
	}
	if err := a.Write(out); err != nil {
		return nil, nil, "", err
	}
	path, err := Build(merged, a)
	return merged, a, path, err
}
