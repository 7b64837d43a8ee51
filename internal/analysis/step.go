package analysis

import (
	"fmt"
	"slices"
)

// A Step is one thing the analysis says about a run, registered as data
// from its own file's init (as workloads and metrics are): what it needs,
// how it is computed over the run's View, and what it writes. Of runs
// every registered step in registration order; Write writes each one's
// files.
type Step struct {
	// Name names the step (tlab's listing; Analysis.Output's key).
	Name string
	// Doc says in a sentence what the step says about a run.
	Doc string
	// Columns are the records.csv columns the step reads through
	// View.Records: the view reads every step's at once, once a run.
	Columns []string
	// Files are the files the step may write into the run directory.
	Files []string
	// Compute sets the step's part of the analysis from the view.
	Compute func(v *View, a *Analysis) error
	// Write writes the step's files into dir (none when the run has
	// nothing for it) and returns the names of those it wrote.
	Write func(a *Analysis, dir string) ([]string, error)
	// Render says what the report shows of the step (nil: nothing for
	// this run): a step the report has no page part of its own for is
	// rendered through it. The steps the report knows by their fields
	// (the verdicts, the load, the replay, the answer, the record
	// series, ξ) leave it nil.
	Render func(a *Analysis) *Section
}

// Section is a step's part of the report, as text (the report escapes
// it): a heading, a paragraph, and a table of Header's columns.
type Section struct {
	// Step is the step's name (set by Sections).
	Step   string
	Title  string
	Text   string
	Header []string
	Rows   [][]string
}

// steps are the registered steps, in registration order; filled by init
// functions only, read afterwards.
var steps []Step

// Register adds an analysis step; a second step of the same name, or one
// without Compute, is a programming error.
func Register(s Step) {
	if s.Name == "" || s.Compute == nil {
		panic("analysis: a step needs a name and Compute")
	}
	if slices.ContainsFunc(steps, func(o Step) bool { return o.Name == s.Name }) {
		panic(fmt.Sprintf("analysis: step %q registered twice", s.Name))
	}
	steps = append(steps, s)
}

// Steps lists the registered steps, in the order they run.
func Steps() []Step { return slices.Clone(steps) }

// stepColumns are the records.csv columns any step reads.
func stepColumns() []string {
	var out []string
	for _, s := range steps {
		for _, c := range s.Columns {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
