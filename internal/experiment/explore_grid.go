package experiment

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/cellrun"
	"tlab/internal/explore"
	"tlab/internal/results"
)

// GridFile is the comparison of an exploration with the full grid, one row
// per grid point and question, written into the exploration's directory.
const GridFile = "explore-vs-grid.csv"

// GridComparison is an exploration's map beside an ordinary run of the
// full grid over the same range, stacks and requirements: at each grid
// point, each stack's status and the best stack as the grid's own answer
// decides them (tlab's fixed-n reading: 95 % intervals of the
// repetitions, as tlab run's answer), and as the map decides them
// (measured, or carried from agreeing corners). SameRule reads the grid's
// cells by the map's own rule instead (the always-valid test at the map's
// alpha, shared over the grid's points and comparisons): what the grid
// would decide if it were judged as the map judges (the same shares of
// alpha: explore.Shares, over the grid's points).
type GridComparison struct {
	Params    []explore.Param
	Questions []string
	Rows      []explore.GridRow
	SameRule  []explore.GridRow
	// Cells each run measured (its summary rows), the grid's points and
	// the map's measured ones.
	GridCells, MapCells   int
	GridPoints, MapPoints int
	// Disturbed: cells tlab's normal quality rule calls disturbed (the
	// emulator's release error p99 above 5 % of the median delay, CPU
	// stolen), whatever rule the run itself used.
	GridDisturbed, MapDisturbed int
}

// CompareWithGrid reads the full grid's run directory and the
// exploration's and compares their decisions at the grid's points.
func CompareWithGrid(gridDir, mapDir string) (GridComparison, error) {
	var out GridComparison
	sc, err := OpenResume(mapDir)
	if err != nil {
		return out, fmt.Errorf("the exploration: %w", err)
	}
	spec, err := explore.SpecOf(sc)
	if err != nil {
		return out, fmt.Errorf("the exploration %s: %w", mapDir, err)
	}
	reqs := advise.RequirementsOf(sc)
	stacks := sc.Protocols
	comps := explore.Comparisons(stacks, reqs)
	out.Params, out.Questions = spec.Params, explore.Questions(stacks)
	var facts explore.Facts
	b, err := os.ReadFile(filepath.Join(mapDir, explore.MapFile))
	if err != nil {
		return out, fmt.Errorf("the exploration's map: %w", err)
	}
	if err := json.Unmarshal(b, &facts); err != nil {
		return out, fmt.Errorf("%s: %w", filepath.Join(mapDir, explore.MapFile), err)
	}
	measured, err := readMapPoints(filepath.Join(mapDir, explore.PointsFile), spec.Params, stacks)
	if err != nil {
		return out, err
	}
	// Points measured: those with repetitions of their own (the others
	// are decided by inference or by a floor).
	for _, p := range measured {
		if p.Reps > 0 {
			out.MapPoints++
		}
	}
	mapRun, err := results.Open(mapDir)
	if err != nil {
		return out, fmt.Errorf("the exploration: %w", err)
	}
	out.MapCells, out.MapDisturbed = len(mapRun.Rows), countDisturbed(mapRun.Rows)
	gridRun, err := results.Open(gridDir)
	if err != nil {
		return out, fmt.Errorf("the grid: %w", err)
	}
	out.GridCells, out.GridDisturbed = len(gridRun.Rows), countDisturbed(gridRun.Rows)

	// The grid's rows by point, in the grid's order.
	type point struct {
		values []float64
		rows   []results.Summary
	}
	var points []*point
	byKey := map[string]*point{}
	for _, r := range gridRun.Rows {
		if !slices.Contains(stacks, r.Protocol) {
			continue
		}
		vals, err := paramValues(r.Params, spec.Params)
		if err != nil {
			return out, fmt.Errorf("the grid's cell %s: %w", r.Cell, err)
		}
		k := fmt.Sprint(vals)
		if byKey[k] == nil {
			byKey[k] = &point{values: vals}
			points = append(points, byKey[k])
		}
		byKey[k].rows = append(byKey[k].rows, r)
	}
	if len(points) == 0 {
		return out, fmt.Errorf("the grid %s has no cells of %s", gridDir, strings.Join(stacks, ", "))
	}
	out.GridPoints = len(points)
	rule := facts.Rule
	if rule == "" {
		rule = explore.TMixture
	}
	alpha := facts.MapAlpha
	if alpha == 0 {
		alpha = facts.Alpha
	}
	shares := explore.Shares(comps)
	var own, same []explore.GridPoint
	for _, p := range points {
		answers, err := analysis.Answer(analysis.Question{Rows: p.rows, Requirements: reqs})
		if err != nil || len(answers) != 1 {
			return out, fmt.Errorf("the grid's answer at %v: %v", p.values, errors.Join(err, fmt.Errorf("%d answers", len(answers))))
		}
		reps := repetitionsOf(p.rows)
		own = append(own, explore.GridPoint{Values: p.values, Decisions: answerDecisions(answers[0], stacks), Reps: len(reps)})
		var verdicts []explore.Verdict
		for i, c := range comps {
			verdicts = append(verdicts, c.Judge(reps, rule, alpha, len(points)*shares[i]))
		}
		same = append(same, explore.GridPoint{Values: p.values, Decisions: explore.Decisions(stacks, comps, verdicts), Reps: len(reps)})
	}
	out.Rows = explore.AgainstGrid(out.Questions, own, measured)
	out.SameRule = explore.AgainstGrid(out.Questions, same, measured)
	return out, nil
}

// answerDecisions are the grid's answer at a point in Decisions' order:
// each stack's status, then the best stack when the answer names one no
// other stack ties with and no stack is left undecided (one might be
// better), None when every stack fails.
func answerDecisions(a advise.Answer, stacks []string) []string {
	status := map[string]string{}
	allFail, open := true, false
	for _, s := range a.Stacks {
		status[s.Protocol] = string(s.Status)
		allFail = allFail && s.Status == advise.Fails
		open = open || s.Status == advise.Undecided
	}
	var out []string
	for _, st := range stacks {
		if s, ok := status[st]; ok {
			out = append(out, s)
		} else {
			out = append(out, explore.Undecided)
		}
	}
	switch {
	case a.Best != "" && len(a.Tie) == 0 && !open:
		return append(out, a.Best)
	case allFail && len(a.Stacks) == len(stacks):
		return append(out, explore.None)
	}
	return append(out, explore.Undecided)
}

// repetitionsOf are a point's rows as the search reads them: one map per
// repetition, stack by stack, metric by metric.
func repetitionsOf(rows []results.Summary) []map[string]map[string]float64 {
	byRep := map[int]map[string]map[string]float64{}
	var order []int
	for _, r := range rows {
		if byRep[r.Rep] == nil {
			byRep[r.Rep] = map[string]map[string]float64{}
			order = append(order, r.Rep)
		}
		vals := map[string]float64{}
		for _, f := range r.Fields {
			vals[f.Name] = r.Float(f.Name)
		}
		byRep[r.Rep][r.Protocol] = vals
	}
	slices.Sort(order)
	var out []map[string]map[string]float64
	for _, rep := range order {
		out = append(out, byRep[rep])
	}
	return out
}

// paramValues reads a cell's explored parameters in their ranges' units.
func paramValues(ps []results.Param, params []explore.Param) ([]float64, error) {
	var out []float64
	for _, p := range params {
		found := false
		for _, q := range ps {
			if q.Key != p.Path {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q.Value), p.Unit)), 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: want a number in %q", q.Key, q.Value, p.Unit)
			}
			out = append(out, v)
			found = true
		}
		if !found {
			return nil, fmt.Errorf("no value of %s (the grid must sweep the explored parameters)", p.Path)
		}
	}
	return out, nil
}

// readMapPoints reads explore-points.csv into the map's decisions at each
// measured point (explore.Decisions' order).
func readMapPoints(path string, params []explore.Param, stacks []string) ([]explore.GridPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the exploration's points: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("%s: %v", path, errors.Join(err, errors.New("no header")))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, need := range []string{"point", "stack", "repetitions", "status", "best"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, need)
		}
	}
	type acc struct {
		values   []float64
		status   map[string]string
		inferred map[string]bool
		floor    map[string]bool
		best     string
		reps     int
	}
	howCol, hasHow := col["how"]
	var order []string
	byPoint := map[string]*acc{}
	for _, r := range recs[1:] {
		label := r[col["point"]]
		a := byPoint[label]
		if a == nil {
			a = &acc{status: map[string]string{}, inferred: map[string]bool{}, floor: map[string]bool{}}
			for i := range params {
				v, err := strconv.ParseFloat(r[1+i], 64)
				if err != nil {
					return nil, fmt.Errorf("%s: point %s: %v", path, label, err)
				}
				a.values = append(a.values, v)
			}
			byPoint[label] = a
			order = append(order, label)
		}
		st := r[col["stack"]]
		a.status[st] = r[col["status"]]
		a.inferred[st] = hasHow && r[howCol] == explore.HowInferred
		a.floor[st] = hasHow && r[howCol] == explore.HowFloor
		if r[col["best"]] == "true" {
			a.best = st
		}
		if n, err := strconv.Atoi(r[col["repetitions"]]); err == nil {
			a.reps = max(a.reps, n)
		}
	}
	var out []explore.GridPoint
	for _, label := range order {
		a := byPoint[label]
		anyInferred, anyFloor, allFloor := false, false, true
		for _, inf := range a.inferred {
			anyInferred = anyInferred || inf
		}
		for _, st := range stacks {
			anyFloor = anyFloor || a.floor[st]
			allFloor = allFloor && a.floor[st]
		}
		if a.reps == 0 && !anyInferred && !anyFloor {
			// Planned when the budget ran out, never measured: no
			// verdict of its own, and no corner of another's.
			continue
		}
		p := explore.GridPoint{Values: a.values, Reps: a.reps}
		allFail := true
		for _, st := range stacks {
			s, ok := a.status[st]
			if !ok {
				s = explore.Undecided
			}
			allFail = allFail && s == string(advise.Fails)
			p.Decisions = append(p.Decisions, s)
			p.Inferred = append(p.Inferred, a.inferred[st])
			p.ByFloor = append(p.ByFloor, a.floor[st])
		}
		switch {
		case a.best != "":
			p.Decisions = append(p.Decisions, a.best)
		case allFail:
			p.Decisions = append(p.Decisions, explore.None)
		default:
			p.Decisions = append(p.Decisions, explore.Undecided)
		}
		// A best that needed an inferred status is inferred too; one
		// every status of which a floor decided is the floor's.
		decided := p.Decisions[len(stacks)] != explore.Undecided
		p.Inferred = append(p.Inferred, anyInferred && decided && !allFloor)
		p.ByFloor = append(p.ByFloor, allFloor && decided)
		out = append(out, p)
	}
	return out, nil
}

// countDisturbed counts the rows tlab's normal quality rule calls
// disturbed: the row's own mark when the run re-ran cells, else the rule
// applied to its figures against its median delay.
func countDisturbed(rows []results.Summary) int {
	n := 0
	q := cellrun.Quality{Mode: "normal"}
	for _, r := range rows {
		if strings.HasPrefix(r.Label("quality"), "disturbed") {
			n++
			continue
		}
		median := r.Float("delay_p50_ms")
		if math.IsNaN(median) {
			median = r.Float("message_latency_p50_ms")
		}
		if q.Disturbance(r, median) != "" {
			n++
		}
	}
	return n
}

// Write writes the rows (both readings) as GridFile into dir.
func (g GridComparison) Write(dir string) error {
	head := []string{"reading"}
	for _, p := range g.Params {
		head = append(head, p.Path)
	}
	head = append(head, "question", "grid", "map", "map_how", "grid_repetitions", "map_repetitions", "agree", "kind", "why")
	out := [][]string{head}
	for _, set := range []struct {
		name string
		rows []explore.GridRow
	}{{"grid-answer", g.Rows}, {"same-rule", g.SameRule}} {
		for _, r := range set.rows {
			row := []string{set.name}
			for _, v := range r.Values {
				row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
			}
			row = append(row, r.Question, r.Grid, r.Map, r.How, strconv.Itoa(r.GridReps), strconv.Itoa(r.MapReps), strconv.FormatBool(r.Agree), r.Kind, r.Why)
			out = append(out, row)
		}
	}
	f, err := os.Create(filepath.Join(dir, GridFile))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(out); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", GridFile, err)
	}
	return f.Close()
}

// Text is the comparison side by side, for the terminal.
func (g GridComparison) Text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-28s %12s %12s\n", "", "grid", "map")
	fmt.Fprintf(&sb, "%-28s %12d %12d\n", "points measured", g.GridPoints, g.MapPoints)
	fmt.Fprintf(&sb, "%-28s %12d %12d (%.0f %% of the grid's)\n", "cells", g.GridCells, g.MapCells, 100*float64(g.MapCells)/float64(max(g.GridCells, 1)))
	fmt.Fprintf(&sb, "%-28s %12d %12d\n", "cells disturbed (normal rule)", g.GridDisturbed, g.MapDisturbed)
	for _, set := range []struct {
		name string
		rows []explore.GridRow
	}{{"the grid's own answer (fixed-n 95 % intervals)", g.Rows}, {"the grid read by the map's rule (always-valid, alpha over the grid)", g.SameRule}} {
		s := explore.Summarize(set.rows)
		fmt.Fprintf(&sb, "\nAgainst %s: %d decisions (%d points x %s)\n", set.name, s.Rows, g.GridPoints, strings.Join(g.Questions, ", "))
		fmt.Fprintf(&sb, "  agree: %d of %d (%.0f %%); the grid decides %d, the map decides %d (%d of them inferred by monotonicity, %d by a floor); the map decides the same as the grid at %d of the grid's %d; opposite: %d\n",
			s.Agree, s.Rows, 100*float64(s.Agree)/float64(max(s.Rows, 1)), s.GridDecided, s.MapDecided, s.MapInferred, s.MapFloor, s.MapAlso, s.GridDecided, s.Opposite)
		var kinds []string
		for k := range s.Kinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			fmt.Fprintf(&sb, "  disagree, %s: %d\n", k, s.Kinds[k])
		}
	}
	return sb.String()
}
