package experiment

import (
	"fmt"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/results"
)

// Analyzed is what the step after a sweep made of a run directory.
type Analyzed struct {
	Analysis *analysis.Analysis
	// Report is report.html's path, when one was written.
	Report string
}

// Renderer renders the report of a run directory from its analysis and
// returns report.html's path (report.Render). The caller hands it to the
// orchestration, which imports no report.
type Renderer func(run *results.Run, a *analysis.Analysis) (string, error)

// Analyze is the step between the sweep and the report, for a run, a
// merge of shards or a rebuild: it reads the run directory once, writes
// its analysis into it for the requirements (none: the run's own), and
// renders the report with render (nil: no report). A run without a
// report has every file but report.html and plots/.
func Analyze(dir string, reqs []advise.Requirement, render Renderer) (Analyzed, error) {
	run, err := results.Open(dir)
	if err != nil {
		return Analyzed{}, err
	}
	a, err := analysis.Of(run, reqs)
	if err != nil {
		return Analyzed{}, err
	}
	if err := a.Write(dir); err != nil {
		return Analyzed{}, fmt.Errorf("writing the analysis: %w", err)
	}
	out := Analyzed{Analysis: a}
	if render == nil {
		return out, nil
	}
	if out.Report, err = render(run, a); err != nil {
		return out, fmt.Errorf("%w: %w", ErrReport, err)
	}
	return out, nil
}
