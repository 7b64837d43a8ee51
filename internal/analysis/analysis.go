// Package analysis is the step between the sweep and the report: what a
// run's rows and records say beyond each cell's own summary, computed once
// and written into the run directory: the pairwise comparisons
// (comparisons.csv and .json), what cross traffic adds to each stack's
// delay (load.csv), a remote run's replay against its real path
// (replay.csv) and the answer to the application's requirements
// (answers.json). The report renders an Analysis; it computes nothing, so
// a run without a report (--no-report, a shard, a merge) has the same
// files.
package analysis

import (
	"fmt"
	"slices"

	"tlab/internal/advise"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// The files an analysis writes (each .json, and .csv but the answers).
const (
	ComparisonsFile = "comparisons"
	LoadFile        = "load"
	// ReplayFile holds, in a remote run checked against its recording,
	// each protocol's figures across the real path and on the recording,
	// in comparisons.csv's columns: profile is the protocol, a the path,
	// b the recording.
	ReplayFile  = "replay"
	AnswersFile = "answers.json"
)

// RealPath is the network name of a remote run's cells (results.RealPath),
// named here for the replay step that reads it.
const RealPath = results.RealPath

// Analysis is what a run's rows and records say.
type Analysis struct {
	// Verdicts compare the protocols pair by pair on each network.
	Verdicts []stats.Comparison
	// UnreachableP is, when no comparison could be significant whatever
	// the data (each over too few repetitions for its test), the smallest
	// p-value the best of them could give; 0 otherwise.
	UnreachableP float64
	// Load says what cross traffic adds to each stack's delay, where the
	// run sweeps cross.flows from 0; LoadComparisons are its figures as
	// load.csv has them.
	Load            []LoadEffect
	LoadComparisons []stats.Comparison
	// Replay compares a remote run's real path with its recording, per
	// protocol (Profile names the protocol, A the path, B the recording).
	Replay []stats.Comparison
	// Requirements are the application's, the first the priority, and
	// Answers say which stack meets them on each network.
	Requirements []advise.Requirement
	// QoO is the Quality of Outcome profile the answer scored each stack
	// against (the manifest's), nil without one.
	QoO     *qoo.Profile
	Answers []advise.Answer
	// Series are each cell's record delays reduced to what the report's
	// record plots draw, by cell (nil without records.csv).
	Series map[string]*CellSeries
	// Xi are study D's completion-time ratios (XiOf finds one), and
	// Reconnect its mean reconnection times (ReconnectOf).
	Xi        []stats.Comparison
	Reconnect []MeanOver
	// CrossRate is, by cell, the cross traffic's summed goodput per
	// 100 ms (s, Mbit/s), for first-repetition cells with cross traffic.
	CrossRate map[string][]Point
	// Files are the files Write wrote, in the steps' order.
	Files []string
	// compared says comparisons were possible (records or repetitions):
	// comparisons.csv is written then, even when empty.
	compared bool
	// only are the steps computed, when not every one was (Only): Write
	// writes theirs alone.
	only []string
	// outputs are the results of steps the report does not know, by name.
	outputs map[string]any
}

// Seed is the seed every bootstrap of a run's analysis uses: the run's,
// so that a figure's interval is the same wherever it is shown.
func Seed(m *results.Manifest) uint64 {
	if m != nil {
		return m.Seed
	}
	return 1
}

// Of analyses a run for the requirements given (none: the manifest's):
// every registered step over one View of it, which reads records.csv
// once. Comparisons need records.csv or repetitions; the replay, a remote
// run with one recording beside its path; the load effects, a sweep of
// cross.flows from 0.
func Of(run *results.Run, reqs []advise.Requirement) (*Analysis, error) {
	return OfView(NewView(run, nil), reqs)
}

// OfView is Of over a view of the run already made.
func OfView(v *View, reqs []advise.Requirement) (*Analysis, error) {
	return ofView(v, reqs, nil)
}

// Only analyses a run with the named steps alone (tlab stats: the
// comparisons), over one View; Write then writes their files alone.
func Only(run *results.Run, names ...string) (*Analysis, error) {
	for _, n := range names {
		if !slices.ContainsFunc(steps, func(s Step) bool { return s.Name == n }) {
			return nil, fmt.Errorf("analysis: no step %q", n)
		}
	}
	return ofView(NewView(run, nil), nil, names)
}

// ofView computes the steps named by only (nil: every one) over v.
func ofView(v *View, reqs []advise.Requirement, only []string) (*Analysis, error) {
	a := &Analysis{Requirements: reqs, only: only}
	if len(a.Requirements) == 0 && v.Run.Manifest != nil {
		var err error
		if a.Requirements, err = advise.ParseAll(v.Run.Manifest.Requirements); err != nil {
			return nil, fmt.Errorf("the run's requirements: %w", err)
		}
	}
	for _, s := range steps {
		if !a.computes(s.Name) {
			continue
		}
		if err := s.Compute(v, a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// computes says whether the analysis computes (and writes) the step.
func (a *Analysis) computes(step string) bool {
	return a.only == nil || slices.Contains(a.only, step)
}

// Compared says the run could be compared (it has records or repeated
// cells): the comparisons were computed and comparisons.csv is written.
func (a *Analysis) Compared() bool { return a.compared || len(a.Verdicts) > 0 }

// Sections are what the steps that render themselves (Step.Render) show
// in the report, in the steps' order; a step with nothing to show for
// this run gives none.
func (a *Analysis) Sections() []Section {
	var out []Section
	for _, s := range steps {
		if s.Render == nil {
			continue
		}
		if sec := s.Render(a); sec != nil {
			sec.Step = s.Name
			out = append(out, *sec)
		}
	}
	return out
}

// Output is what a step that the report does not know set (SetOutput),
// nil when it set nothing.
func (a *Analysis) Output(step string) any { return a.outputs[step] }

// SetOutput keeps a step's own result for its Write.
func (a *Analysis) SetOutput(step string, v any) {
	if a.outputs == nil {
		a.outputs = map[string]any{}
	}
	a.outputs[step] = v
}

// Write writes the analysis into dir, each step its files (comparisons
// where the run could be compared, an empty list when nothing was; load
// and replay where the run has them; the answers where it has
// requirements or a Quality of Outcome profile), and lists them in Files.
func (a *Analysis) Write(dir string) error {
	a.Files = nil
	for _, s := range steps {
		if s.Write == nil || !a.computes(s.Name) {
			continue
		}
		files, err := s.Write(a, dir)
		if err != nil {
			return fmt.Errorf("analysis %s: %w", s.Name, err)
		}
		a.Files = append(a.Files, files...)
	}
	return nil
}

// RequirementTexts are the requirements as the manifest and the report
// write them.
func (a *Analysis) RequirementTexts() []string {
	var out []string
	for _, r := range a.Requirements {
		out = append(out, r.String())
	}
	return out
}

// hasRepeats says whether some cell is repeated.
func hasRepeats(rows []results.Summary) bool {
	for _, r := range rows {
		if r.Rep > 1 {
			return true
		}
	}
	return false
}
