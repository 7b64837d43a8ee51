package experiment

import (
	"fmt"
	"path/filepath"
	"slices"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/metrics"
	"tlab/internal/qoo"
	"tlab/internal/results"
)

// ComparisonRenderer renders the report of runs put side by side into
// dir from their merged rows (each tagged with its run's name, in names)
// and their analysis, and returns report.html's path
// (report.RenderComparison): handed in, so that experiment imports no
// report.
type ComparisonRenderer func(dir string, names []string, rows []results.Summary, a *analysis.Analysis) (string, error)

// Compare puts several runs side by side (tlab compare): their rows, each
// tagged with its run's name as a swept value "run" (and its cells
// prefixed NAME/), go into one summary in out; the analysis of the runs
// together (analysis.OfRuns: each run's verdicts, the answer on every
// run's every network for the requirements and profile given, none: the
// runs' own when they all state the same) is written there and rendered
// with render (nil: no report). It returns the analysis and the report's
// path.
func Compare(dirs []string, out string, reqs []advise.Requirement, profile *qoo.Profile, render ComparisonRenderer) (*analysis.Analysis, string, error) {
	var names []string
	var runs []analysis.NamedRun
	var rows []results.Summary
	for _, d := range dirs {
		r, err := results.Open(d)
		if err != nil {
			return nil, "", fmt.Errorf("report: %w", err)
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
			rows = append(rows, row)
		}
	}
	if err := results.PrepareOut(out); err != nil {
		return nil, "", err
	}
	if err := results.WriteTypedSummaries(out, rows, metrics.ColumnType); err != nil {
		return nil, "", err
	}
	a, err := analysis.OfRuns(runs, rows, reqs, profile)
	if err != nil {
		return nil, "", err
	}
	if err := a.Write(out); err != nil {
		return nil, "", err
	}
	if render == nil {
		return a, "", nil
	}
	path, err := render(out, names, rows, a)
	return a, path, err
}
