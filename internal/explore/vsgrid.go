package explore

import (
	"fmt"
	"math"
	"slices"

	"tlab/internal/advise"
)

// None is the best-stack decision of a point where every stack is decided
// to fail a requirement.
const None = "none"

// Decisions are what a point decides, question by question: each stack's
// status against every requirement (meets, fails or undecided: failing one
// decidedly is enough to fail), then the best stack (None when every
// stack fails; undecided while a stack's status or a pair is open).
func Decisions(stacks []string, comps []Comparison, verdicts []Verdict) []string {
	out := Statuses(stacks, comps, verdicts)
	allFail := true
	for _, status := range out {
		allFail = allFail && status == string(advise.Fails)
	}
	_, best := Standing(stacks, comps, verdicts)
	switch {
	case best != "":
	case allFail:
		best = None
	default:
		best = Undecided
	}
	return append(out, best)
}

// Questions name Decisions' entries: each stack's status, then "best".
func Questions(stacks []string) []string {
	return append(append([]string(nil), stacks...), "best")
}

// GridPoint is one point's decisions (Decisions' order), at its
// parameters' values, with the repetitions that decided them (0: the
// point was not measured).
type GridPoint struct {
	Values    []float64
	Decisions []string
	Reps      int
	// Inferred marks the decisions the map inferred by monotonicity
	// rather than measured (nil: none); a point with Reps 0 is one the
	// map did not measure and inferred something at.
	Inferred []bool
	// ByFloor marks the decisions the map took from a floor, by
	// construction (nil: none).
	ByFloor []bool
}

// How the map's decision at a grid point came about.
const (
	// MapMeasured: the map measured the point itself.
	MapMeasured = "measured"
	// MapInside: the point lies in a rectangle of measured points (a
	// segment on a line) whose corners all decide the same: the map
	// takes it as theirs, as its refinement does (it splits only
	// rectangles whose corners disagree).
	MapInside = "inside agreeing corners"
	// MapBetween: the corners around it decide differently (a boundary
	// between them the map did not refine down to this point).
	MapBetween = "between corners that disagree"
	// MapOpenCorner: a corner around it is undecided.
	MapOpenCorner = "a corner undecided"
	// MapOutside: no measured rectangle encloses it.
	MapOutside = "not enclosed"
	// MapInferred: inferred by monotonicity from a measured point at
	// least as good (a failure) or at least as bad (a success).
	MapInferred = "inferred (monotone)"
	// MapFloor: decided by construction, by the floor the point's links
	// prove for the metric (floor.go).
	MapFloor = "by floor"
)

// GridRow is one grid point and question, the grid's decision beside the
// map's.
type GridRow struct {
	Values   []float64
	Question string
	Grid     string
	Map      string
	// How says how the map's decision came about (Map* constants);
	// MapReps is its repetitions where it measured the point.
	How               string
	GridReps, MapReps int
	// Agree: the same label, undecided included.
	Agree bool
	// Kind names a disagreement's kind (Disagree* constants; "" when
	// they agree), Why explains it in a few words.
	Kind, Why string
}

// Kinds of disagreement between the grid and the map at a point.
const (
	DisagreeMeasuredOpen = "map undecided where it measured"
	DisagreeBetween      = "boundary between the map's points"
	DisagreeOpenCorner   = "map's neighbour undecided"
	DisagreeOutside      = "map has no points around it"
	DisagreeGridOpen     = "grid undecided where the map decides"
	DisagreeOpposite     = "opposite decisions"
)

// AgainstGrid puts the map's decision at every point of a full grid beside
// the grid's own. measured are the map's measured points (values in the
// same units as the grid's). A grid point the map did not measure takes
// the decision of the smallest rectangle of measured points around it
// (a segment with one parameter) when its corners agree, and is undecided
// otherwise: that is what the map claims there, since its search splits
// only rectangles whose corners disagree.
func AgainstGrid(questions []string, grid, measured []GridPoint) []GridRow {
	var rows []GridRow
	for _, g := range grid {
		mp, how := mapAt(g.Values, measured, len(questions))
		for q, name := range questions {
			r := GridRow{Values: g.Values, Question: name, Grid: g.Decisions[q], GridReps: g.Reps, How: how[q]}
			r.Map = mp.Decisions[q]
			r.MapReps = mp.Reps
			r.Agree = r.Map == r.Grid
			if !r.Agree {
				r.Kind, r.Why = disagreement(r)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// disagreement says why the grid and the map differ at a point.
func disagreement(r GridRow) (kind, why string) {
	switch {
	case r.Map == Undecided && r.How == MapMeasured:
		return DisagreeMeasuredOpen, fmt.Sprintf("the map measured it (%d repetitions) and its always-valid rule, alpha shared over the map, did not decide; the grid decided from %d by fixed-n intervals", r.MapReps, r.GridReps)
	case r.Map == Undecided && r.How == MapBetween:
		return DisagreeBetween, "a boundary between the map's measured points: the map did not refine down to this point"
	case r.Map == Undecided && r.How == MapOpenCorner:
		return DisagreeOpenCorner, "a measured neighbour of the map is still undecided"
	case r.Map == Undecided:
		return DisagreeOutside, "the map has no measured points around it"
	case r.Grid == Undecided:
		if r.How == MapMeasured {
			return DisagreeGridOpen, fmt.Sprintf("the map decided from %d repetitions, the grid's fixed-n interval from %d did not", r.MapReps, r.GridReps)
		}
		return DisagreeGridOpen, "the map carries its agreeing corners' decision here; the grid's own repetitions did not decide"
	case r.How == MapInside:
		return DisagreeOpposite, "opposite: a boundary inside a rectangle whose corners agree (the map missed it)"
	case r.How == MapInferred:
		return DisagreeOpposite, "opposite: inferred by monotonicity from a measured point (the status is not monotone here, or a verdict is wrong)"
	case r.How == MapFloor:
		return DisagreeOpposite, "opposite: decided by a floor, which the grid's measurements contradict (the floor's proof does not hold here: a bug)"
	}
	return DisagreeOpposite, "opposite decisions at a measured point"
}

// mapAt is the map's decision at v: the measured point's own, else the
// enclosing rectangle's when its corners agree.
func mapAt(v []float64, measured []GridPoint, nq int) (GridPoint, []string) {
	undecided := func(how string) (GridPoint, []string) {
		p := GridPoint{Values: v}
		hows := make([]string, nq)
		for q := range nq {
			p.Decisions = append(p.Decisions, Undecided)
			hows[q] = how
		}
		return p, hows
	}
	// Inferred decisions first; what they leave open is the measured
	// points' to say.
	withInferred := func(p GridPoint, hows []string, inf *GridPoint) (GridPoint, []string) {
		if inf == nil {
			return p, hows
		}
		p.Decisions = slices.Clone(p.Decisions)
		for q := range nq {
			switch {
			case inf.Decisions[q] == Undecided:
			case q < len(inf.ByFloor) && inf.ByFloor[q]:
				p.Decisions[q], hows[q] = inf.Decisions[q], MapFloor
			case q < len(inf.Inferred) && inf.Inferred[q]:
				p.Decisions[q], hows[q] = inf.Decisions[q], MapInferred
			}
		}
		return p, hows
	}
	var inf *GridPoint
	var corners []GridPoint
	for i, m := range measured {
		if sameValues(m.Values, v) {
			inf = &measured[i]
			if m.Reps > 0 {
				hows := make([]string, nq)
				for q := range hows {
					hows[q] = MapMeasured
				}
				return withInferred(m, hows, inf)
			}
		}
		if m.Reps > 0 {
			corners = append(corners, m)
		}
	}
	corners, ok := enclosing(v, corners)
	if !ok {
		p, hows := undecided(MapOutside)
		return withInferred(p, hows, inf)
	}
	p := GridPoint{Values: v}
	hows := make([]string, nq)
	for q := range nq {
		label, how := corners[0].Decisions[q], MapInside
		for _, c := range corners {
			switch {
			case c.Decisions[q] == Undecided:
				label, how = Undecided, MapOpenCorner
			case c.Decisions[q] != label && how != MapOpenCorner:
				label, how = Undecided, MapBetween
			}
		}
		p.Decisions = append(p.Decisions, label)
		hows[q] = how
	}
	return withInferred(p, hows, inf)
}

// enclosing finds the smallest box of measured points around v: on each
// axis a measured value at or below v and one at or above it, with every
// corner of the box measured.
func enclosing(v []float64, measured []GridPoint) ([]GridPoint, bool) {
	find := func(vals []float64) (GridPoint, bool) {
		for _, m := range measured {
			if sameValues(m.Values, vals) {
				return m, true
			}
		}
		return GridPoint{}, false
	}
	// Candidate low and high values per axis.
	lows := make([][]float64, len(v))
	highs := make([][]float64, len(v))
	for _, m := range measured {
		for a := range v {
			if m.Values[a] <= v[a]+eps(v[a]) {
				lows[a] = appendUnique(lows[a], m.Values[a])
			}
			if m.Values[a] >= v[a]-eps(v[a]) {
				highs[a] = appendUnique(highs[a], m.Values[a])
			}
		}
	}
	best, bestSize := []GridPoint(nil), math.Inf(1)
	var try func(a int, lo, hi []float64)
	try = func(a int, lo, hi []float64) {
		if a == len(v) {
			var corners []GridPoint
			size := 1.0
			for mask := 0; mask < 1<<len(v); mask++ {
				c := make([]float64, len(v))
				for i := range v {
					c[i] = lo[i]
					if mask&(1<<i) != 0 {
						c[i] = hi[i]
					}
				}
				p, ok := find(c)
				if !ok {
					return
				}
				corners = append(corners, p)
			}
			for i := range v {
				size *= 1 + hi[i] - lo[i]
			}
			if size < bestSize {
				best, bestSize = corners, size
			}
			return
		}
		for _, l := range lows[a] {
			for _, h := range highs[a] {
				try(a+1, append(append([]float64(nil), lo...), l), append(append([]float64(nil), hi...), h))
			}
		}
	}
	try(0, nil, nil)
	return best, best != nil
}

func eps(x float64) float64 { return 1e-9 * math.Max(1, math.Abs(x)) }

func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > eps(a[i]) {
			return false
		}
	}
	return true
}

func appendUnique(s []float64, x float64) []float64 {
	for _, y := range s {
		if math.Abs(x-y) <= eps(x) {
			return s
		}
	}
	return append(s, x)
}

// GridSummary counts a comparison's rows: agreement over all, and by kind
// of disagreement.
type GridSummary struct {
	Rows, Agree int
	// GridDecided: rows the grid decides; MapAlso: of those, the map
	// decides the same; Opposite: both decide, differently.
	GridDecided, MapAlso, Opposite int
	// MapDecided: rows the map decides (measured, carried or
	// inferred); MapInferred: of those, inferred by monotonicity;
	// MapFloor: by a floor.
	MapDecided, MapInferred, MapFloor int
	// Kinds counts the disagreements by kind.
	Kinds map[string]int
}

// Summarize counts rows.
func Summarize(rows []GridRow) GridSummary {
	s := GridSummary{Kinds: map[string]int{}}
	for _, r := range rows {
		s.Rows++
		if r.Agree {
			s.Agree++
		} else {
			s.Kinds[r.Kind]++
		}
		if r.Grid != Undecided {
			s.GridDecided++
			if r.Map == r.Grid {
				s.MapAlso++
			}
		}
		if r.Map != Undecided {
			s.MapDecided++
			switch r.How {
			case MapInferred:
				s.MapInferred++
			case MapFloor:
				s.MapFloor++
			}
		}
		if r.Grid != Undecided && r.Map != Undecided && r.Grid != r.Map {
			s.Opposite++
		}
	}
	return s
}
