package report

import (
	"tlab/internal/analysis"
	"tlab/internal/results"
)

// Render writes the report of a run directory already read and analysed
// (report.html and plots/) and returns report.html's path: what the
// orchestration is handed to render a run, so that it need not import
// the report.
func Render(run *results.Run, a *analysis.Analysis) (string, error) {
	r, err := FromRun(run)
	if err != nil {
		return "", err
	}
	return Build(r, a)
}
