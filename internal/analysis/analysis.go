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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// RealPath is the network name of a remote run's cells: the real path to
// the agent, on which nothing is emulated.
const RealPath = "remote"

// Analysis is what a run's rows and records say.
type Analysis struct {
	// Verdicts compare the protocols pair by pair on each network.
	Verdicts []stats.Comparison
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
	// compared says comparisons were possible (records or repetitions):
	// comparisons.csv is written then, even when empty.
	compared bool
}

// Seed is the seed every bootstrap of a run's analysis uses: the run's,
// so that a figure's interval is the same wherever it is shown.
func Seed(m *results.Manifest) uint64 {
	if m != nil {
		return m.Seed
	}
	return 1
}

// Of analyses a run for the requirements given (none: the manifest's).
// Comparisons need records.csv or repetitions; the replay, a remote run
// with one recording beside its path; the load effects, a sweep of
// cross.flows from 0.
func Of(run *results.Run, reqs []advise.Requirement) (*Analysis, error) {
	seed := Seed(run.Manifest)
	a := &Analysis{Requirements: reqs}
	if len(a.Requirements) == 0 && run.Manifest != nil {
		var err error
		if a.Requirements, err = advise.ParseAll(run.Manifest.Requirements); err != nil {
			return nil, fmt.Errorf("the run's requirements: %w", err)
		}
	}
	var err error
	if a.compared = hasRecords(run.Dir) || hasRepeats(run.Rows); a.compared {
		if a.Verdicts, err = stats.ForRun(run, seed); err != nil {
			return nil, fmt.Errorf("comparisons: %w", err)
		}
	}
	if a.Load, a.LoadComparisons, err = loadEffects(run, seed); err != nil {
		return nil, fmt.Errorf("latency under load: %w", err)
	}
	if real, replay, ok := realAndReplay(run); ok {
		if a.Replay, err = stats.AgainstRecording(run, real, replay, seed); err != nil {
			return nil, fmt.Errorf("replay against the path: %w", err)
		}
	}
	if a.Answers, err = Answers(run.Rows, a.Requirements); err != nil {
		return nil, err
	}
	if run.Manifest != nil && len(run.Manifest.QoO) > 0 {
		f, err := qoo.Parse("the manifest's qoo", bytes.NewReader(run.Manifest.QoO))
		if err != nil {
			return nil, err
		}
		a.QoO = &f.Profiles[0]
		if hasRecords(run.Dir) {
			scores, err := qoo.CellScores(filepath.Join(run.Dir, results.RecordsFile), *a.QoO)
			if err != nil {
				return nil, fmt.Errorf("quality of outcome: %w", err)
			}
			if len(a.Answers) == 0 {
				a.Answers = advise.Skeleton(run.Rows)
			}
			advise.WithQoO(a.Answers, run.Rows, a.QoO.ID, scores)
		}
	}
	return a, nil
}

// Answers evaluates requirements on rows (none: no answers), as the
// analysis of a whole run and the live view of one in flight do.
func Answers(rows []results.Summary, reqs []advise.Requirement) ([]advise.Answer, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	return advise.Evaluate(rows, reqs)
}

// Write writes the analysis into dir: comparisons where the run could be
// compared (an empty list when nothing was), load and replay where the
// run has them, and the answers where it has requirements.
func (a *Analysis) Write(dir string) error {
	if a.compared || len(a.Verdicts) > 0 {
		if err := stats.WriteNamed(dir, ComparisonsFile, a.Verdicts); err != nil {
			return err
		}
	}
	if len(a.LoadComparisons) > 0 {
		if err := stats.WriteNamed(dir, LoadFile, a.LoadComparisons); err != nil {
			return err
		}
	}
	if len(a.Replay) > 0 {
		if err := stats.WriteNamed(dir, ReplayFile, a.Replay); err != nil {
			return err
		}
	}
	if len(a.Requirements) == 0 && a.QoO == nil {
		return nil
	}
	return results.WriteAtomic(filepath.Join(dir, AnswersFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Requirements []advise.Requirement `json:"requirements"`
			Answers      []advise.Answer      `json:"answers"`
			Met          bool                 `json:"met_everywhere"`
		}{a.Requirements, a.Answers, advise.Met(a.Answers)})
	})
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

// realAndReplay names the two networks of a remote run checked against
// its recording: the real path and the recording.
func realAndReplay(r *results.Run) (string, string, bool) {
	if r.Manifest == nil || r.Manifest.Remote == nil {
		return "", "", false
	}
	var nets []string
	for _, row := range r.Rows {
		if !slices.Contains(nets, row.Profile) {
			nets = append(nets, row.Profile)
		}
	}
	if len(nets) != 2 || !slices.Contains(nets, RealPath) {
		return "", "", false
	}
	if nets[0] == RealPath {
		return nets[0], nets[1], true
	}
	return nets[1], nets[0], true
}

// hasRecords says whether the run directory holds the joined records.
func hasRecords(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, results.RecordsFile))
	return err == nil
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
