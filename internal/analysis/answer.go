package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tlab/internal/advise"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// The answer is assembled here and nowhere else: a run's analysis (Of), a
// comparison of runs (OfRuns), a run in flight (SoFar) and tlab advise
// (Ask) each gather their rows and scores and call Answer; the report and
// the live view render what it returns.

// qooColumns are the records.csv columns a Quality of Outcome score reads
// (qoo.CellScores; interval_ms for a profile that follows the period).
var qooColumns = []string{"delay_ms", "resp_bytes", "done_ms", "interval_ms"}

func init() {
	Register(Step{
		Name:    "answer",
		Doc:     "which stack meets the application's requirements on each network, and each stack's Quality of Outcome",
		Columns: qooColumns,
		Files:   []string{AnswersFile},
		Compute: func(v *View, a *Analysis) error {
			m := v.Run.Manifest
			var err error
			if m != nil && len(m.QoO) > 0 {
				if a.QoO, err = parseQoO("the manifest's qoo", m.QoO); err != nil {
					return err
				}
			}
			q := Question{Rows: v.Run.Rows, Requirements: a.Requirements, QoO: a.QoO}
			if a.QoO != nil && v.HasRecords() {
				if q.Scores, err = qoo.CellScoresOver(v.Records, *a.QoO); err != nil {
					return fmt.Errorf("quality of outcome: %w", err)
				}
			}
			a.Answers, err = Answer(q)
			return err
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			if len(a.Requirements) == 0 && a.QoO == nil {
				return nil, nil
			}
			return []string{AnswersFile}, writeAnswers(a, dir)
		},
	})
}

// Question is what an answer answers.
type Question struct {
	// Rows are the cells' summaries: stacks on networks.
	Rows []results.Summary
	// Requirements are the application's, the first the priority (none:
	// no requirement is checked).
	Requirements []advise.Requirement
	// QoO is a Quality of Outcome profile, and Scores each cell's score
	// against it by the cell's name in Rows; nil Scores (no records to
	// score) leave the outcome out of the answer.
	QoO    *qoo.Profile
	Scores map[string]qoo.Result
}

// Answer is the answer to q: the requirements evaluated on the rows (no
// requirement: no answer), each stack's Quality of Outcome added where
// cells were scored (an answer per network then, even without
// requirements).
func Answer(q Question) ([]advise.Answer, error) {
	var answers []advise.Answer
	if len(q.Requirements) > 0 {
		var err error
		if answers, err = advise.Evaluate(q.Rows, q.Requirements); err != nil {
			return nil, err
		}
	}
	if q.QoO != nil && q.Scores != nil {
		if len(answers) == 0 {
			answers = advise.Skeleton(q.Rows)
		}
		advise.WithQoO(answers, q.Rows, q.QoO.ID, q.Scores)
	}
	return answers, nil
}

// ScoreError says the cells could not be scored against a Quality of
// Outcome profile (records missing or unreadable), as against a question
// that is wrong.
type ScoreError struct{ Err error }

func (e *ScoreError) Error() string { return e.Err.Error() }
func (e *ScoreError) Unwrap() error { return e.Err }

// Ask answers the requirements and profile given (not the manifest's) on
// a finished run, as tlab advise asks: a profile needs the run's records
// (a *ScoreError without them).
func Ask(run *results.Run, reqs []advise.Requirement, profile *qoo.Profile) ([]advise.Answer, error) {
	return askView(NewView(run, nil), reqs, profile)
}

func askView(v *View, reqs []advise.Requirement, profile *qoo.Profile) ([]advise.Answer, error) {
	q := Question{Rows: v.Run.Rows, Requirements: reqs, QoO: profile}
	if profile != nil {
		var err error
		if q.Scores, err = qoo.CellScoresOver(v.Records, *profile); err != nil {
			return nil, &ScoreError{err}
		}
	}
	return Answer(q)
}

// Scored are the cells of a run in flight that SoFar has scored against
// its Quality of Outcome profile (the zero value: none yet): a finished
// cell's records no longer change, so a view polled through a long run
// keeps one and reads each cell's records once.
type Scored struct{ cells map[string]qoo.Result }

// SoFar is the answer so far to a run in flight in dir: its manifest's
// requirements and profile on the rows complete, each cell scored from
// its own records (a cell without them, still running or re-run, is left
// out). scored holds the cells scored already, which it adds to (nil:
// every cell is scored afresh).
func SoFar(dir string, m *results.Manifest, rows []results.Summary, scored *Scored) ([]advise.Answer, error) {
	if scored == nil {
		scored = &Scored{}
	}
	if scored.cells == nil {
		scored.cells = map[string]qoo.Result{}
	}
	var q Question
	q.Rows = rows
	if m == nil {
		return Answer(q)
	}
	var err error
	if q.Requirements, err = advise.ParseAll(m.Requirements); err != nil {
		return nil, fmt.Errorf("the run's requirements: %w", err)
	}
	if len(m.QoO) > 0 {
		if q.QoO, err = parseQoO("the run's qoo", m.QoO); err != nil {
			return nil, err
		}
		for _, row := range rows {
			if _, ok := scored.cells[row.Cell]; ok {
				continue
			}
			path := filepath.Join(results.CellDir(dir, row.Cell), results.RecordsFile)
			if _, err := os.Stat(path); err != nil {
				continue
			}
			s, err := qoo.CellScores(path, *q.QoO)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for cell, r := range s {
				scored.cells[cell] = r
			}
		}
		q.Scores = scored.cells
	}
	return Answer(q)
}

// NamedRun is one of several runs compared: its name (the rows' swept
// value "run", and the prefix of their cells: NAME/CELL) and the
// directory as the user gave it, for errors.
type NamedRun struct {
	Name, Given string
	Run         *results.Run
}

// OfRuns analyses runs side by side, their rows merged into rows (each
// tagged with its run's name): each run's own verdicts (its records and
// seed) labelled with its name, and the answer on the merged rows for
// the requirements given (none: the runs' own when every run states the
// same) and the profile given (nil: the runs' own when they all keep the
// same), each run's cells scored from its records.
func OfRuns(runs []NamedRun, rows []results.Summary, reqs []advise.Requirement, profile *qoo.Profile) (*Analysis, error) {
	a := &Analysis{Requirements: reqs}
	views := make([]*View, len(runs))
	for i, nr := range runs {
		views[i] = NewView(nr.Run, nil)
		vs, err := stats.ForRunOver(nr.Run, views[i].records(), views[i].Seed)
		if err != nil {
			return nil, fmt.Errorf("%s: comparisons: %w", nr.Given, err)
		}
		for _, v := range vs {
			v.Params = strings.TrimSuffix(nr.Name+" / "+v.Params, " / ")
			a.Verdicts = append(a.Verdicts, v)
		}
	}
	own := func(nr NamedRun) []string {
		if nr.Run.Manifest == nil {
			return nil
		}
		return nr.Run.Manifest.Requirements
	}
	ownQoO := func(nr NamedRun) string {
		if nr.Run.Manifest == nil {
			return ""
		}
		return string(nr.Run.Manifest.QoO)
	}
	if len(reqs) == 0 && len(runs) > 0 && !slices.ContainsFunc(runs, func(nr NamedRun) bool { return !slices.Equal(own(nr), own(runs[0])) }) {
		var err error
		if a.Requirements, err = advise.ParseAll(own(runs[0])); err != nil {
			return nil, fmt.Errorf("the runs' requirements: %w", err)
		}
	}
	if profile == nil && len(runs) > 0 && ownQoO(runs[0]) != "" && !slices.ContainsFunc(runs, func(nr NamedRun) bool { return ownQoO(nr) != ownQoO(runs[0]) }) {
		var err error
		if profile, err = parseQoO("the runs' qoo", []byte(ownQoO(runs[0]))); err != nil {
			return nil, err
		}
	}
	q := Question{Rows: rows, Requirements: a.Requirements, QoO: profile}
	if profile != nil {
		q.Scores = map[string]qoo.Result{}
		for i, nr := range runs {
			s, err := qoo.CellScoresOver(views[i].Records, *profile)
			if err != nil {
				return nil, fmt.Errorf("%s: quality of outcome: %w", nr.Given, err)
			}
			for cell, r := range s {
				q.Scores[nr.Name+"/"+cell] = r
			}
		}
		a.QoO = profile
	}
	// The bars' means, the delay boxes and the connections grids over
	// the rows side by side (each run's cells apart, by their swept value
	// "run").
	a.SetOutput(MeansStep, repetitionMeans(rows))
	if b := averagedDelayBoxes(rows); b != nil {
		a.SetOutput(DelayBoxStep, b)
	}
	if g := connsGridsOf(rows, [][]results.Param{nil}); g != nil {
		a.SetOutput(ConnsGridStep, g)
	}
	var err error
	if a.Answers, err = Answer(q); err != nil {
		return nil, err
	}
	return a, nil
}

// writeAnswers writes answers.json: the requirements, the answers and
// whether a stack meets them everywhere.
func writeAnswers(a *Analysis, dir string) error {
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

// parseQoO reads the one profile a manifest keeps (qoo.Profile.Wire).
func parseQoO(what string, wire []byte) (*qoo.Profile, error) {
	f, err := qoo.Parse(what, bytes.NewReader(wire))
	if err != nil {
		return nil, err
	}
	return &f.Profiles[0], nil
}
