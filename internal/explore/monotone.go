package explore

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"tlab/internal/advise"
)

// monotoneFields are the scenario fields along which the network gets
// worse by construction, and in which direction: more loss, delay or
// jitter (+1), less rate (-1). A stack's chance of meeting a requirement
// (a requirement names what the application needs, so the worse the
// network the less it is met) does not rise as the network gets worse:
// a stack that fails at a point fails at every point at least as bad on
// every such axis, and one that meets meets at every point at least as
// good. The explore section's monotone: list names the axes this is
// assumed along; none without it. It is not the default: the monotone
// search spends its cells on settling the stacks' statuses, and in two
// dimensions does not look for where one stack stops beating another
// (the pairs), which the coarse grid's refinement does.
var monotoneFields = map[string]int{
	"link.loss":   1,
	"link.rtt":    1,
	"link.delay":  1,
	"link.jitter": 1,
	"link.rate":   -1,
}

// MonotoneFields names the fields monotone: may list, in order.
func MonotoneFields() []string {
	var out []string
	for f := range monotoneFields {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// monotoneDirections are the directions along params: the declared
// fields' (none declared: all 0).
func monotoneDirections(params []Param, declared []string) ([]int, error) {
	dirs := make([]int, len(params))
	for _, f := range declared {
		i := slices.IndexFunc(params, func(p Param) bool { return p.Path == f })
		if i < 0 {
			return nil, fmt.Errorf("monotone: %s is not an explored parameter", f)
		}
		d, ok := monotoneFields[f]
		if !ok {
			return nil, fmt.Errorf("monotone: %s has no known direction (worse as it grows or as it falls): monotone applies to %s", f, strings.Join(MonotoneFields(), ", "))
		}
		dirs[i] = d
	}
	return dirs, nil
}

// How a lattice point's status came about.
const (
	HowMeasured = "measured"
	// HowInferred: by monotonicity from a measured point at least as
	// good (a failure) or at least as bad (a success).
	HowInferred = "inferred"
)

// LatticePoint is a point of the map's finest grid with what the map
// says there, measured or inferred: each stack's status, how it came
// about ("" while undecided), and the best stack (None when every stack
// fails, "" while open).
type LatticePoint struct {
	Point
	Reps   int
	Status []string
	How    []string
	Best   string
	// Floor is, per stack, the floor behind a status decided by one
	// (HowFloor), else its first requirement's floor (NaN: none).
	Floor []float64
}

// monotone says whether the search infers along any axis.
func (s *search) monotone() bool {
	return slices.ContainsFunc(s.cfg.Monotone, func(d int) bool { return d != 0 })
}

// atLeastAsBad says whether b is at least as bad a network as a on every
// monotone axis and the same on the others.
func (s *search) atLeastAsBad(a, b [2]int) bool {
	for i := range s.cfg.Params {
		switch d := s.cfg.Monotone[i]; {
		case d == 0 && a[i] != b[i]:
			return false
		case d > 0 && b[i] < a[i], d < 0 && b[i] > a[i]:
			return false
		}
	}
	return true
}

// lattice is every point of the finest grid.
func (s *search) lattice() [][2]int {
	var out [][2]int
	for j := 0; j <= s.n[1]; j++ {
		for i := 0; i <= s.n[0]; i++ {
			out = append(out, [2]int{i, j})
		}
	}
	return out
}

// statusAt is each stack's status at idx and how it came about: the
// floor's, where the point's floors decide it by construction (floor.go);
// the point's own decided status where it was measured to a decision, else
// inferred from another point's own (measured or by its floors) (a failure at a point at
// least as good, a success at a point at least as bad); undecided where
// neither, or where inferences contradict each other (monotonicity does
// not hold there, or a verdict is wrong: the map does not pick).
func (s *search) statusAt(idx [2]int, own map[[2]int][]string) (status, how []string) {
	status = make([]string, len(s.cfg.Stacks))
	how = make([]string, len(s.cfg.Stacks))
	mine := own[idx]
	byFloor, _ := floorStatuses(s.cfg.Stacks, s.comps, s.floorsAt(idx))
	for k := range s.cfg.Stacks {
		status[k] = Undecided
		if byFloor[k] != "" {
			status[k], how[k] = byFloor[k], HowFloor
			continue
		}
		if mine != nil && mine[k] != Undecided {
			status[k], how[k] = mine[k], HowMeasured
			continue
		}
		fails, meets := false, false
		for at, st := range own {
			switch {
			case st[k] == string(advise.Fails) && s.atLeastAsBad(at, idx):
				fails = true
			case st[k] == string(advise.Meets) && s.atLeastAsBad(idx, at):
				meets = true
			}
		}
		switch {
		case fails && !meets:
			status[k], how[k] = string(advise.Fails), HowInferred
		case meets && !fails:
			status[k], how[k] = string(advise.Meets), HowInferred
		}
	}
	return status, how
}

// ownStatuses are the points' own statuses: the measured points' and,
// at every point of the lattice, measured or not, those its floors
// decide. A floor's status holds by construction, so it carries along a
// monotone parameter as a measured one does: a deadline every response
// misses at no jitter is missed at every larger jitter too.
func (s *search) ownStatuses() map[[2]int][]string {
	own := map[[2]int][]string{}
	for _, p := range s.order {
		if len(p.Reps) > 0 {
			own[p.Index] = Statuses(s.cfg.Stacks, s.comps, p.Verdicts)
		}
	}
	if s.cfg.Floor == nil {
		return own
	}
	for _, idx := range s.lattice() {
		byFloor, _ := floorStatuses(s.cfg.Stacks, s.comps, s.floorsAt(idx))
		for k, st := range byFloor {
			if st == "" {
				continue
			}
			if own[idx] == nil {
				own[idx] = make([]string, len(s.cfg.Stacks))
				for i := range own[idx] {
					own[idx][i] = Undecided
				}
			}
			own[idx][k] = st
		}
	}
	return own
}

// statusBest is the best stack statuses alone decide: None when every
// stack fails, the one that meets when every other fails; "" otherwise
// (which of two that meet is better is the pairs' to say: monotonicity
// says nothing about it, since where one stack stops beating another is
// what a map looks for).
func statusBest(stacks, status []string) string {
	meets, fails := -1, 0
	for k, st := range status {
		switch st {
		case string(advise.Fails):
			fails++
		case string(advise.Meets):
			meets = k
		}
	}
	switch {
	case fails == len(stacks):
		return None
	case fails == len(stacks)-1 && meets >= 0:
		return stacks[meets]
	}
	return ""
}

// settleByInference stops measured points whose every status is decided,
// by their own verdicts or by inference, where that leaves the best
// fixed (None, or the only stack that meets).
func (s *search) settleByInference() {
	own := s.ownStatuses()
	for _, p := range s.order {
		if p.Settled {
			continue
		}
		status, _ := s.statusAt(p.Index, own)
		if statusBest(s.cfg.Stacks, status) != "" {
			p.Settled = true
		}
	}
}

// monotoneWindow is how many points the monotone search measures at
// once: each new point is picked knowing what the points before it
// decided, so fewer at once waste less; two keep a point that will not
// decide from holding up the rest.
const monotoneWindow = 2

// grow adds new points to measure while fewer than monotoneWindow are
// repeating, each the lattice point whose decision settles the most of
// the lattice still open whichever way it goes (the minimax choice: for
// each stack open there, the lesser of the open points at least as bad
// and at least as good; a median of the open region, as bisection), and
// says whether open points were left for want of MaxPoints.
func (s *search) grow() (starved bool) {
	active := 0
	for _, p := range s.order {
		if !p.Settled && !s.parked(p) {
			active++
		}
	}
	own := s.ownStatuses()
	lat := s.lattice()
	open := make([][]bool, len(lat))
	for i, idx := range lat {
		st, _ := s.statusAt(idx, own)
		open[i] = make([]bool, len(st))
		for k := range st {
			open[i][k] = st[k] == Undecided
		}
	}
	// Points picked this round count as settling both ways, so that the
	// next pick goes elsewhere; only the first search says whether any
	// point is left to pick.
	for first := true; ; first = false {
		best, bestScore := -1, 0
		for ci, c := range lat {
			if s.points[c] != nil {
				continue
			}
			score := 0
			for k := range s.cfg.Stacks {
				if !open[ci][k] {
					continue
				}
				worse, better := 0, 0
				for oi, o := range lat {
					if !open[oi][k] {
						continue
					}
					if s.atLeastAsBad(c, o) {
						worse++
					}
					if s.atLeastAsBad(o, c) {
						better++
					}
				}
				score += min(worse, better)
			}
			if score > bestScore {
				best, bestScore = ci, score
			}
		}
		if first {
			s.exhausted = best < 0
		}
		if best < 0 || active >= monotoneWindow {
			return false
		}
		if len(s.order) >= s.cfg.MaxPoints {
			return true
		}
		s.add(lat[best])
		active++
		for oi, o := range lat {
			if s.atLeastAsBad(lat[best], o) || s.atLeastAsBad(o, lat[best]) {
				for k := range open[oi] {
					open[oi][k] = false
				}
			}
		}
	}
}

// parked says whether a point yields its place in the window: it has
// had a repetition more than the rule needs to decide anything at all
// (fewestToDecide) and decided no further status in its last two. A
// point near a bound, or on a noisy host, may never decide; while other
// points are open, the budget goes to them, and parked points resume
// once nothing is left to pick (stopping to look is always allowed: the
// rule's level holds whenever it is read).
func (s *search) parked(p *PointResult) bool {
	return s.park > 0 && !p.Settled && len(p.Reps) >= s.park && len(p.Reps)-p.gained >= 2
}

// fewestToDecide is the fewest repetitions at which any requirement could
// be decided at the map's level, from values as far from the bound as
// they come with no spread: the t mixture's ceiling (1+ng)^((n-1)/2),
// or, for a bounded metric, the mean of it and the bet at the range's far
// end. A metric with a floor only (a latency) has no far end: it is
// read one unit from the bound like an unbounded one, where the floor
// bet pays nothing and the t mixture's ceiling decides (halved by the
// mean with the bet: a point parks one repetition later at most, never
// sooner because of a rare value far out). Before that, no point can gain a decision, however clear.
func (s *search) fewestToDecide() int {
	shares := Shares(s.comps)
	alpha := s.cfg.Alpha * (1 - s.cfg.WhyShare)
	for n := max(2, s.cfg.MinReps); n < s.cfg.MaxReps; n++ {
		for i, c := range s.comps {
			if c.Kind != RequirementKind {
				continue
			}
			far := 1.0
			if len(c.Range) == 2 {
				far = math.Max(c.Range[1]-c.Requirement.Bound, c.Requirement.Bound-c.Range[0])
				if c.Requirement.Bound-c.Range[0] > c.Range[1]-c.Requirement.Bound {
					far = -far
				}
			}
			d := make([]float64, n)
			for k := range d {
				d[k] = far
			}
			if c.LogE(s.cfg.Rule, d) >= math.Log(float64(s.cfg.MaxPoints*shares[i])/alpha) {
				return n
			}
		}
	}
	return s.cfg.MaxReps
}

// latticeResult is what the map says at every lattice point, when it
// infers.
func (s *search) latticeResult() []LatticePoint {
	if !s.monotone() {
		return nil
	}
	own := s.ownStatuses()
	var out []LatticePoint
	for _, idx := range s.lattice() {
		status, how := s.statusAt(idx, own)
		_, floor := floorStatuses(s.cfg.Stacks, s.comps, s.floorsAt(idx))
		lp := LatticePoint{Status: status, How: how, Floor: floor}
		if p := s.points[idx]; p != nil {
			lp.Point, lp.Reps, lp.Best = p.Point, len(p.Reps), p.Best
		} else {
			lp.Point = s.pointAt(idx)
		}
		if lp.Best == "" {
			lp.Best = statusBest(s.cfg.Stacks, status)
		}
		out = append(out, lp)
	}
	return out
}
