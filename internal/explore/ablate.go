package explore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Ablation removes one impairment: settings applied on top of a point's
// ("no jitter": link.jitter=0ms).
type Ablation struct {
	// Name is the removal in words ("no jitter"); Impairment what it
	// removes ("jitter").
	Name       string
	Impairment string
	Settings   []Setting
	// Absent: the scenario's link has none of it, so there is nothing to
	// remove and nothing is measured.
	Absent bool
	// Note says why a removal was not measured (Absent, or a link the
	// removal cannot be expressed on).
	Note string
}

// What a removal did to a boundary (AblationResult.Moved).
const (
	// MovedYes: a side's decided verdict changed: the flip needs the
	// impairment.
	MovedYes = "yes"
	// MovedNo: both sides decided as before: the flip does not need it.
	MovedNo = "no"
	// MovedUndecided: a side stayed undecided (and no decided side
	// changed): the removal's data do not tell.
	MovedUndecided = "undecided"
	// MovedExplored: the removal sets the parameter the boundary lies
	// along; the map itself varies it, nothing is measured.
	MovedExplored = "explored"
	// MovedAbsent: the link has nothing of it to remove.
	MovedAbsent = "absent"
	// MovedNotMeasured: the budget ran out before the removal was
	// measured to a decision.
	MovedNotMeasured = "not measured"
)

// Movement is the pure decision of what a removal did to a boundary,
// from its two sides' verdicts before and after: a side decided to the
// other verdict than before moved it (whatever the other side says); both
// sides decided as before did not; anything else (a side undecided) is
// undecided, and never counts as a mechanism.
func Movement(belowBefore, aboveBefore, belowAfter, aboveAfter string) string {
	changed := func(before, after string) bool { return after != Undecided && after != before }
	switch {
	case changed(belowBefore, belowAfter) || changed(aboveBefore, aboveAfter):
		return MovedYes
	case belowAfter == belowBefore && aboveAfter == aboveBefore:
		return MovedNo
	}
	return MovedUndecided
}

// AblationResult is a boundary's comparison re-measured at its two
// bracketing points with one impairment removed.
type AblationResult struct {
	Ablation Ablation
	// Below and Above are the comparison's verdicts at the bracketing
	// points without the impairment (N: the repetitions each took).
	Below, Above Verdict
	Moved        string
	Says         string
	// Accounts are the evidence figures' means at either side without
	// the impairment, as Boundary.Accounts are with it.
	Accounts []Account
}

// Why is a boundary's attribution: every removal's result, the
// impairments whose removal moved it (the mechanism; empty when not
// attributed) and a line in plain language.
type Why struct {
	Boundary  Boundary
	Removals  []AblationResult
	Mechanism []string
	Says      string
}

// Explanation is the ablations of a map's boundaries: what each says and
// what they spent.
type Explanation struct {
	Whys  []Why
	Cells int
	// Alpha is the ablations' part of the map's alpha (Map.WhyAlpha),
	// shared among Tests: one judgement per measured removal, boundary
	// and side, counted before any is measured.
	Alpha float64
	Tests int
	// Stopped is "decided" or "budget".
	Stopped string
}

// Explain is the lab's own method of attributing a flip to its
// mechanism: each boundary's bracketing points are measured again with
// one impairment removed at a time (each removal by its own measurer:
// its own run), each side repeated until the boundary's comparison is
// decided there or MaxReps, by the map's rule at the ablations' level:
// the part of alpha the map kept for them (Map.WhyAlpha) shared among
// their judgements, so that the map and its ablations together err with
// chance at most alpha. A removal that makes a side decide the other way moves the
// boundary: the flip needs that impairment. One that leaves both sides
// decided as before is not the flip's cause. A removal that sets the
// parameter the boundary lies along is not measured (the map varies it).
// Repetitions at a point serve every boundary bracketed by it; the
// budget (cells, wall time from cfg.Now; Cells < 0: nothing left)
// bounds all of it, and what it cuts off stays "not measured".
func Explain(ctx context.Context, m *Map, cfg Config, abl []Ablation, measurerFor func(Ablation) (Measurer, error), budget Budget) (*Explanation, error) {
	cfg.Defaults()
	ex := &Explanation{Stopped: "decided"}
	type side struct{ low, high *PointResult }
	sides := make([]side, len(m.Boundaries))
	for i, b := range m.Boundaries {
		for _, p := range m.Points {
			if !math.IsNaN(b.At) && p.Values[1-b.Axis] != b.At {
				continue
			}
			if p.Values[b.Axis] == b.Low {
				sides[i].low = p
			}
			if p.Values[b.Axis] == b.High {
				sides[i].high = p
			}
		}
		if sides[i].low == nil || sides[i].high == nil {
			return nil, fmt.Errorf("explore: the boundary %s: its bracketing points are not on the map", m.Sentence(b))
		}
	}
	if m.WhyShare <= 0 {
		return nil, errors.New("explore: the map kept no part of alpha for the ablations (Config.WhyShare): their verdicts would add to its error rate")
	}
	// The ablations' family: both sides of every boundary each removal
	// measures. It is counted from the map alone, before any ablation is
	// measured, so that alpha's split does not depend on their data.
	for _, a := range abl {
		for _, b := range m.Boundaries {
			if !a.Absent && !setsAxis(a, m.Params[b.Axis]) {
				ex.Tests += 2
			}
		}
	}
	ex.Alpha = m.WhyAlpha()
	results := make([][]AblationResult, len(m.Boundaries))
	start := cfg.Now()
	per := len(m.Stacks)
	for _, a := range abl {
		// What to measure: the bracketing points of every boundary this
		// removal applies to, with the removal's settings merged in.
		pending := map[int]bool{}
		for i, b := range m.Boundaries {
			switch {
			case a.Absent:
				results[i] = append(results[i], AblationResult{Ablation: a, Moved: MovedAbsent, Says: a.Note})
			case setsAxis(a, m.Params[b.Axis]):
				results[i] = append(results[i], AblationResult{Ablation: a, Moved: MovedExplored,
					Says: fmt.Sprintf("%s sets %s, the parameter the boundary lies along: the map itself varies it", a.Name, m.Params[b.Axis].Path)})
			default:
				pending[i] = true
			}
		}
		if len(pending) == 0 {
			continue
		}
		var meas Measurer // made when there is something to measure
		reps := map[[2]int][]map[string]map[string]float64{}
		points := map[[2]int]Point{}
		for i := range pending {
			for _, p := range []*PointResult{sides[i].low, sides[i].high} {
				points[p.Index] = ablated(p.Point, a)
			}
		}
		verdict := func(i int, p *PointResult) Verdict {
			c := m.Comparisons[m.Boundaries[i].Comparison]
			return c.Judge(reps[p.Index], cfg.Rule, ex.Alpha, ex.Tests)
		}
		cut := false
		for !cut {
			// Each point's next repetitions, while a boundary it brackets
			// is undecided there.
			want := map[[2]int]int{}
			for i := range pending {
				for _, p := range []*PointResult{sides[i].low, sides[i].high} {
					n := len(reps[p.Index])
					if n >= cfg.MaxReps || (n >= cfg.MinReps && verdict(i, p).Label != Undecided) {
						continue
					}
					want[p.Index] = max(want[p.Index], max(cfg.MinReps, n+1))
				}
			}
			var reqs []Request
			for _, idx := range slices.SortedFunc(maps.Keys(want), func(a, b [2]int) int {
				return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
			}) {
				for r := len(reps[idx]) + 1; r <= want[idx]; r++ {
					reqs = append(reqs, Request{Point: points[idx], Rep: r})
				}
			}
			if len(reqs) == 0 {
				break
			}
			if budget.Cells != 0 {
				left := (budget.Cells - ex.Cells) / max(1, per)
				if left < len(reqs) {
					reqs, cut = reqs[:max(0, left)], true
				}
			}
			if budget.Duration > 0 && cfg.Now().Sub(start) >= budget.Duration {
				reqs, cut = nil, true
			}
			if len(reqs) == 0 {
				break
			}
			if meas == nil {
				var err error
				if meas, err = measurerFor(a); err != nil {
					return ex, fmt.Errorf("explore: %s: %w", a.Name, err)
				}
			}
			outs, err := meas.Measure(ctx, reqs)
			ex.Cells += len(outs) * per
			for _, o := range outs {
				if o.Rep == len(reps[o.Point.Index])+1 {
					reps[o.Point.Index] = append(reps[o.Point.Index], o.Values)
				}
			}
			if err != nil {
				return ex, fmt.Errorf("explore: %s: %w", a.Name, err)
			}
			if len(outs) < len(reqs) {
				return ex, fmt.Errorf("explore: %s: %d of %d repetitions came back", a.Name, len(outs), len(reqs))
			}
		}
		if cut {
			ex.Stopped = "budget"
		}
		for i, b := range m.Boundaries {
			if !pending[i] {
				continue
			}
			lo, hi := sides[i].low, sides[i].high
			r := AblationResult{Ablation: a, Below: verdict(i, lo), Above: verdict(i, hi)}
			r.Moved = Movement(b.Below, b.Above, r.Below.Label, r.Above.Label)
			if cut && r.Moved == MovedUndecided && (len(reps[lo.Index]) < cfg.MaxReps || len(reps[hi.Index]) < cfg.MaxReps) {
				r.Moved = MovedNotMeasured
			}
			for _, s := range []struct {
				name string
				p    *PointResult
			}{{"below", lo}, {"above", hi}} {
				r.Accounts = append(r.Accounts, accounts(s.name, s.p.Values[b.Axis], reps[s.p.Index], m.Stacks, cfg.Evidence)...)
			}
			r.Says = m.removalSays(b, r)
			results[i] = append(results[i], r)
		}
	}
	for i, b := range m.Boundaries {
		w := Why{Boundary: b, Removals: results[i]}
		w.Mechanism, w.Says = m.attribute(b, results[i])
		ex.Whys = append(ex.Whys, w)
	}
	return ex, nil
}

// field is a setting's field name without the direction ("link.up.loss"
// and "link.loss" are both loss).
func field(path string) string { return path[strings.LastIndex(path, ".")+1:] }

// setsAxis says whether the removal sets the parameter a boundary lies
// along.
func setsAxis(a Ablation, p Param) bool {
	return slices.ContainsFunc(a.Settings, func(s Setting) bool { return field(s.Path) == field(p.Path) })
}

// ablated is the point with the removal's settings merged in: a setting
// of an explored field (the other axis of a plane) replaces its value,
// the others are added, so that the cell's fields are set once each.
func ablated(p Point, a Ablation) Point {
	p.Settings = slices.Clone(p.Settings)
	for _, s := range a.Settings {
		if i := slices.IndexFunc(p.Settings, func(t Setting) bool { return t.Path == s.Path }); i >= 0 {
			p.Settings[i] = s
		} else {
			p.Settings = append(p.Settings, s)
		}
	}
	return p
}

// accounts are the evidence figures' means over one side's repetitions.
func accounts(side string, at float64, reps []map[string]map[string]float64, stacks, figures []string) []Account {
	var out []Account
	for _, st := range stacks {
		for _, fig := range figures {
			var v []float64
			for _, r := range reps {
				v = append(v, figureOf(r, st, fig))
			}
			out = append(out, Account{Side: side, At: at, Stack: st, Figure: fig, Mean: finiteMean(v)})
		}
	}
	return out
}

// figureOf is a repetition's figure for a stack, NaN where its cell has
// none (a figure of another kind of workload), never 0.
func figureOf(rep map[string]map[string]float64, stack, fig string) float64 {
	if v, ok := rep[stack][fig]; ok {
		return v
	}
	return math.NaN()
}

// removalSays puts one measured removal in words.
func (m *Map) removalSays(b Boundary, r AblationResult) string {
	c := m.Comparisons[b.Comparison]
	p := m.Params[b.Axis]
	where := fmt.Sprintf("at %s and %s", p.Format(b.Low), p.Format(b.High))
	after := fmt.Sprintf("%s below, %s above, %s; before: %s, %s", r.Below.Label, r.Above.Label, where, b.Below, b.Above)
	switch r.Moved {
	case MovedNo:
		return fmt.Sprintf("without %s it stays (%s)", r.Ablation.Impairment, after)
	case MovedYes:
		switch {
		case r.Below.Label == r.Above.Label:
			return fmt.Sprintf("without %s %s on both sides (%s)", r.Ablation.Impairment, c.Says(r.Below.Label), after)
		default:
			return fmt.Sprintf("without %s the verdicts change (%s)", r.Ablation.Impairment, after)
		}
	case MovedNotMeasured:
		return fmt.Sprintf("without %s: not measured to a decision, the budget ran out (%s)", r.Ablation.Impairment, after)
	}
	return fmt.Sprintf("without %s undecided after %d and %d repetitions (%s)", r.Ablation.Impairment, r.Below.N, r.Above.N, after)
}

// attribute names the mechanism of a boundary from its removals and says
// it in a line. The mechanism is every impairment whose removal moved
// the boundary; failing that, the explored impairment the boundary lies
// along when every other removal was measured and left it (or had
// nothing to remove): it is the only thing that changes across the
// boundary. Anything undecided leaves the boundary not attributed:
// never a mechanism the data do not show.
func (m *Map) attribute(b Boundary, rs []AblationResult) ([]string, string) {
	p := m.Params[b.Axis]
	head := fmt.Sprintf("the boundary at %s = %s", p.Path, p.Format(b.Estimate))
	var moved, parts []string
	along := ""
	open := false
	for _, r := range rs {
		switch r.Moved {
		case MovedYes:
			moved = append(moved, r.Ablation.Impairment)
			parts = append(parts, r.Says)
		case MovedExplored:
			along = r.Ablation.Impairment
		case MovedAbsent:
			parts = append(parts, fmt.Sprintf("the link has no %s to remove", r.Ablation.Impairment))
		case MovedNo:
			parts = append(parts, r.Says)
		default:
			open = true
			parts = append(parts, r.Says)
		}
	}
	rest := ""
	if len(parts) > 0 {
		rest = ": " + strings.Join(parts, "; ")
	}
	switch {
	case len(moved) > 0:
		return moved, fmt.Sprintf("%s is %s's%s", head, strings.Join(moved, " and "), rest)
	case along != "" && !open:
		says := fmt.Sprintf("%s is %s's: %s is what changes across it, and no other removal moves it", head, along, along)
		if len(parts) > 0 {
			says += " (" + strings.Join(parts, "; ") + ")"
		}
		return []string{along}, says
	case len(rs) == 0:
		return nil, head + " is not attributed: no removal was tried"
	}
	return nil, fmt.Sprintf("%s is not attributed to a removed impairment%s", head, rest)
}
