// Package experiment runs scenarios: a run (a scenario, a preset, an
// ad-hoc comparison, a resume) into a results directory, its sweep over
// the compiled cells with the quality rule's re-runs and repetitions
// until decided, suites of scenarios, shards and their merge, comparisons
// of runs, explorations of a range, tlab shell and the crosscheck. Each
// cell runs through package cellrun.
package experiment
