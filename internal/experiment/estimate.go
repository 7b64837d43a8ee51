package experiment

import (
	"time"

	"tlab/internal/plan"
	"tlab/internal/scenario"
)

// Estimate is what a scenario would run, before it runs: its compiled
// cells and their planned time, and, with repetitions: auto, the most it
// may run (every point repeated to the maximum). tlab validate and tlab
// presets print it; the run itself compiles the same cells.
type Estimate struct {
	Cells   []plan.Cell
	Planned time.Duration
	// MaxRepetitions is repetitions: auto's maximum (0 without it);
	// MostCells and MostPlanned are set when it exceeds the repetitions
	// run first.
	MaxRepetitions int
	MostCells      int
	MostPlanned    time.Duration
}

// EstimateOf compiles sc's cells and estimates their time.
func EstimateOf(sc *scenario.Scenario) (Estimate, error) {
	cells, err := plan.Compile(sc)
	if err != nil {
		return Estimate{}, err
	}
	e := Estimate{Cells: cells, Planned: Plan(cells)}
	if maxReps, auto := sc.AutoRepetitions(); auto {
		e.MaxRepetitions = maxReps
		if maxReps > sc.Repetitions {
			// repetitions: auto runs the first repetitions, then more
			// only while a verdict is open: a range, not one figure.
			e.MostCells = mostCells(len(cells), sc.Repetitions, maxReps)
			e.MostPlanned = scalePlan(e.Planned, e.MostCells, len(cells))
		}
	}
	return e, nil
}

// mostCells is how many cells a scenario with repetitions: auto runs when
// every point goes to maxReps: its cells for the first reps, scaled.
func mostCells(cells, reps, maxReps int) int {
	return cells / max(reps, 1) * maxReps
}

// scalePlan scales a planned time for cells to most cells (the cells of
// one repetition cost the same in every repetition).
func scalePlan(planned time.Duration, most, cells int) time.Duration {
	return time.Duration(float64(planned) * float64(most) / float64(max(cells, 1)))
}
