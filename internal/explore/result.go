package explore

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// result assembles the map from the search's state.
func (s *search) result(spent, rounds int, stopped string) *Map {
	m := &Map{Params: s.cfg.Params, Stacks: s.cfg.Stacks, Comparisons: s.comps, Cells: spent, Rounds: rounds,
		Stopped: stopped, Alpha: s.cfg.Alpha, WhyShare: s.cfg.WhyShare, Tests: s.tests, Rule: s.cfg.Rule, MaxReps: s.cfg.MaxReps, GridPoints: 1}
	for i := range s.cfg.Params {
		m.GridPoints *= s.n[i] + 1
	}
	m.Monotone, m.Lattice = s.cfg.Monotone, s.latticeResult()
	m.Points = s.sorted(func(*PointResult) bool { return true }, 0)
	if len(s.cfg.Params) == 2 {
		slices.SortStableFunc(m.Points, func(a, b *PointResult) int { return a.Index[1] - b.Index[1] })
	}
	// Boundaries along each axis, on every line of points that share the
	// other coordinate.
	for axis := range s.cfg.Params {
		other := 1 - axis
		lines := map[int][]*PointResult{}
		var keys []int
		for _, p := range s.order {
			k := 0
			if len(s.cfg.Params) == 2 {
				k = p.Index[other]
			}
			if lines[k] == nil {
				keys = append(keys, k)
			}
			lines[k] = append(lines[k], p)
		}
		slices.Sort(keys)
		for _, k := range keys {
			line := lines[k]
			slices.SortFunc(line, func(a, b *PointResult) int { return a.Index[axis] - b.Index[axis] })
			at := math.NaN()
			if len(s.cfg.Params) == 2 {
				at = line[0].Values[other]
			}
			m.Boundaries = append(m.Boundaries, s.boundaries(line, axis, at)...)
		}
	}
	// What stayed open: points still repeating, and disagreements the
	// search did not refine.
	for _, p := range m.Points {
		if !p.Settled {
			m.Open = append(m.Open, Region{Low: p.Values, High: p.Values,
				Why: fmt.Sprintf("%s: still undecided after %d repetitions (at most %d)", p.Label(), len(p.Reps), s.cfg.MaxReps)})
		}
	}
	if s.monotone() {
		open := 0
		for _, lp := range m.Lattice {
			if lp.Reps == 0 && slices.Contains(lp.Status, Undecided) {
				open++
			}
		}
		if open > 0 {
			lo, hi := make([]float64, len(s.cfg.Params)), make([]float64, len(s.cfg.Params))
			for i, p := range s.cfg.Params {
				lo[i], hi[i] = p.Low, p.High
			}
			m.Open = append(m.Open, Region{Low: lo, High: hi,
				Why: fmt.Sprintf("%d of the %d points of the finest grid have a stack whose status was neither measured nor inferred", open, len(m.Lattice))})
		}
	} else if len(s.cfg.Params) == 1 {
		line := m.Points
		for i := 0; i+1 < len(line); i++ {
			a, b := line[i], line[i+1]
			if b.Index[0]-a.Index[0] > 1 && a.key() != b.key() {
				m.Open = append(m.Open, Region{Low: a.Values, High: b.Values,
					Why: fmt.Sprintf("between %s and %s the verdicts differ and no point was measured", a.Label(), b.Label())})
			}
		}
	} else {
		for _, q := range s.squares {
			if s.splits(q) != [2]bool{} {
				lo, hi := s.points[q.corners()[0]], s.points[q.corners()[3]]
				m.Open = append(m.Open, Region{Low: lo.Values, High: hi.Values,
					Why: fmt.Sprintf("the square from %s to %s has corners that disagree and was not divided", lo.Label(), hi.Label())})
			}
		}
	}
	return m
}

// boundaries walks a line of points along axis and records each change
// between decided verdicts of a comparison, bracketed by the nearest
// decided points on either side (undecided points between them widen the
// interval, as they should).
func (s *search) boundaries(line []*PointResult, axis int, at float64) []Boundary {
	var out []Boundary
	for ci := range s.comps {
		var last *PointResult
		for _, p := range line {
			v := p.Verdicts[ci]
			if v.Label == Undecided {
				continue
			}
			if last != nil && last.Verdicts[ci].Label != v.Label {
				b := Boundary{Comparison: ci, Axis: axis, At: at, Low: last.Values[axis], High: p.Values[axis],
					Below: last.Verdicts[ci].Label, Above: v.Label}
				// The mean difference crosses zero between the two: the
				// estimate interpolates it in the lattice's coordinates
				// (even on a logarithmic range), else the middle.
				u0, u1 := float64(last.Index[axis]), float64(p.Index[axis])
				e0, e1 := last.Verdicts[ci].Effect, v.Effect
				u := (u0 + u1) / 2
				if e0*e1 < 0 {
					u = u0 + (u1-u0)*e0/(e0-e1)
				}
				b.Estimate = s.cfg.Params[axis].At(u / float64(s.n[axis]))
				for _, side := range []struct {
					name string
					p    *PointResult
				}{{"below", last}, {"above", p}} {
					for _, st := range s.cfg.Stacks {
						for _, fig := range s.cfg.Evidence {
							var v []float64
							for _, r := range side.p.Reps {
								v = append(v, figureOf(r, st, fig))
							}
							b.Accounts = append(b.Accounts, Account{Side: side.name, At: side.p.Values[axis], Stack: st, Figure: fig, Mean: finiteMean(v)})
						}
					}
				}
				out = append(out, b)
			}
			last = p
		}
	}
	return out
}

// Decided says whether every point settled with every comparison decided.
func (m *Map) Decided() bool {
	for _, p := range m.Points {
		for _, v := range p.Verdicts {
			if v.Label == Undecided {
				return false
			}
		}
	}
	return len(m.Open) == 0
}

// Sentence says a boundary in words: "link.loss = 1.797% [1.719%,
// 1.875%] at link.rtt = 20ms: quic's delay_p99_ms is lower than tcp's
// below, tcp's ... above".
func (m *Map) Sentence(b Boundary) string {
	p := m.Params[b.Axis]
	c := m.Comparisons[b.Comparison]
	at := ""
	if !math.IsNaN(b.At) {
		o := m.Params[1-b.Axis]
		at = " at " + o.Path + " = " + o.Format(b.At)
	}
	return fmt.Sprintf("%s above %s = %s [%s, %s]%s (below it %s)", c.Says(b.Above), p.Path, p.Format(b.Estimate),
		p.Format(b.Low), p.Format(b.High), at, c.Says(b.Below))
}

// Answer is the map in plain language: the boundaries, what held
// everywhere measured, what stayed undecided, what the search spent
// against the full grid and what stayed open.
func (m *Map) Answer() string {
	var sb strings.Builder
	names := make([]string, len(m.Params))
	for i, p := range m.Params {
		names[i] = fmt.Sprintf("%s from %s to %s", p.Path, p.Format(p.Low), p.Format(p.High))
	}
	fmt.Fprintf(&sb, "Explored %s: %d points, %d cells in %d rounds (the full grid at this resolution: %d points).\n",
		strings.Join(names, " and "), len(m.Points), m.Cells, m.Rounds, m.GridPoints)
	if len(m.Boundaries) == 0 {
		sb.WriteString("No boundary: no decided verdict changes across the range.\n")
	}
	for i, b := range m.Boundaries {
		sb.WriteString("- " + m.Sentence(b) + "\n")
		if a := m.Account(b); a != "" {
			sb.WriteString("  " + a + "\n")
		}
		if m.Why != nil && i < len(m.Why.Whys) {
			sb.WriteString("  Why: " + m.Why.Whys[i].Says + "\n")
		}
	}
	switch {
	case m.Why != nil && m.Why.Stopped == "budget" && m.Why.Cells == 0:
		sb.WriteString("No budget was left to explain the boundaries by ablation (more --budget, with --resume, would).\n")
	case m.Why != nil && m.Why.Stopped == "budget":
		fmt.Fprintf(&sb, "The budget ran out during the ablations (%d cells): a removal not measured to a decision attributes nothing.\n", m.Why.Cells)
	case m.Why != nil:
		fmt.Fprintf(&sb, "The ablations (the why) spent %d cells more.\n", m.Why.Cells)
	}
	settled := !slices.ContainsFunc(m.Points, func(p *PointResult) bool { return !p.Settled })
	for ci, c := range m.Comparisons {
		labels := map[string]int{}
		for _, p := range m.Points {
			labels[p.Verdicts[ci].Label]++
		}
		switch {
		case len(labels) == 1 && labels[Undecided] > 0 && settled:
			fmt.Fprintf(&sb, "- %s: undecided at every point, each after %d repetitions: no difference the rule can tell from noise.\n", c.Name(), m.MaxReps)
		case len(labels) == 1 && labels[Undecided] > 0:
			fmt.Fprintf(&sb, "- %s: undecided at every point so far (not every point had its %d repetitions).\n", c.Name(), m.MaxReps)
		case len(labels) == 1:
			for l := range labels {
				fmt.Fprintf(&sb, "- %s at every point measured.\n", c.Says(l))
			}
		}
	}
	if len(m.Lattice) > 0 {
		inferred, at := 0, 0
		for _, lp := range m.Lattice {
			n := 0
			for _, h := range lp.How {
				if h == HowInferred {
					n++
				}
			}
			inferred += n
			if n > 0 && lp.Reps == 0 {
				at++
			}
		}
		var axes []string
		for i, d := range m.Monotone {
			if d != 0 {
				axes = append(axes, m.Params[i].Path)
			}
		}
		fmt.Fprintf(&sb, "Inferred along %s (a failure holds at every worse point, a success at every better one): %d statuses, %d of them at points not measured (explore-points.csv: how).\n",
			strings.Join(axes, " and "), inferred, at)
	}
	if n, at, lo, hi := m.byFloor(); n > 0 {
		fmt.Fprintf(&sb, "Decided by construction: %d statuses at %d points, by the floor the point's links prove for the metric (%s to %s; explore-points.csv: how = floor, and the column floor), with no repetition needed.\n",
			n, at, floorWhy(lo), floorWhy(hi))
	}
	switch m.Stopped {
	case "decided":
		sb.WriteString("The search ended with nothing left to refine.\n")
	case "budget":
		sb.WriteString("The budget ran out.\n")
	case "points":
		fmt.Fprintf(&sb, "The search reached its most points (%d).\n", len(m.Points))
	}
	if len(m.Open) > 0 {
		sb.WriteString("Still open (more budget, repetitions or points would decide them):\n")
		for _, r := range m.Open {
			sb.WriteString("- " + r.Why + "\n")
		}
	}
	if m.WhyShare > 0 {
		fmt.Fprintf(&sb, "Each verdict is decided by the %s rule's always-valid test; the chance of any decided verdict being wrong, over the map and its ablations, is at most %g: %g for the map's (shared among %d reported decisions; a point's pairs split its best's share), %g for the ablations'.\n", m.Rule, m.Alpha, m.MapAlpha(), m.Tests, m.WhyAlpha())
	} else {
		fmt.Fprintf(&sb, "Each verdict is decided by the %s rule's always-valid test at a map-wide error rate of %g (shared among %d reported decisions; a point's pairs split its best's share).\n", m.Rule, m.Alpha, m.Tests)
	}
	return sb.String()
}

// Account says what the records show on either side of a boundary, for
// the stacks the comparison involves: "at 1.25%: quic conns_per_1000 1,
// late_sends 0; tcp ...; at 2.5%: ...". Empty without evidence figures.
func (m *Map) Account(b Boundary) string {
	c := m.Comparisons[b.Comparison]
	involved := func(st string) bool {
		if c.Kind == PairKind {
			return st == c.A || st == c.B
		}
		return st == c.Stack
	}
	p := m.Params[b.Axis]
	var sides []string
	for _, side := range []string{"below", "above"} {
		var stacks []string
		byStack := map[string][]string{}
		at := math.NaN()
		for _, a := range b.Accounts {
			if a.Side != side || !involved(a.Stack) || math.IsNaN(a.Mean) {
				continue
			}
			at = a.At
			if byStack[a.Stack] == nil {
				stacks = append(stacks, a.Stack)
			}
			byStack[a.Stack] = append(byStack[a.Stack], fmt.Sprintf("%s %.3g", a.Figure, a.Mean))
		}
		if len(stacks) == 0 {
			continue
		}
		var parts []string
		for _, st := range stacks {
			parts = append(parts, st+" "+strings.Join(byStack[st], ", "))
		}
		sides = append(sides, "at "+p.Format(at)+": "+strings.Join(parts, "; "))
	}
	if len(sides) == 0 {
		return ""
	}
	return "the records beside it: " + strings.Join(sides, " | ")
}

// byFloor counts the statuses the floors decide (over the lattice where
// the map infers, else over its points), the points they are at, and the
// least and largest floor behind them.
func (m *Map) byFloor() (n, at int, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	count := func(how []string, floor []float64) {
		k := 0
		for i, h := range how {
			if h == HowFloor {
				k++
				lo, hi = math.Min(lo, floor[i]), math.Max(hi, floor[i])
			}
		}
		n += k
		if k > 0 {
			at++
		}
	}
	if len(m.Lattice) > 0 {
		for _, lp := range m.Lattice {
			count(lp.How, lp.Floor)
		}
		return n, at, lo, hi
	}
	for _, p := range m.Points {
		if p.Floors == nil {
			continue
		}
		status, floor := floorStatuses(m.Stacks, m.Comparisons, p.Floors)
		how := make([]string, len(status))
		for i, st := range status {
			if st != "" {
				how[i] = HowFloor
			}
		}
		count(how, floor)
	}
	return n, at, lo, hi
}
