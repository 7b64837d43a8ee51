package explore

import (
	"math"
	"slices"
	"strconv"

	"tlab/internal/advise"
)

// HowFloor: a status decided by construction, by the floor the point's
// compiled cell proves for the requirement's metric (Config.Floor), with
// no repetition needed: every value the metric can take there already
// fails the requirement (or meets it).
const HowFloor = "floor"

// floorsAt are, per comparison, the floor of the requirement's metric at
// the lattice point idx for the comparison's stack (NaN where none is
// proved, and for pairs), asked once per point.
func (s *search) floorsAt(idx [2]int) []float64 {
	if f, ok := s.floors[idx]; ok {
		return f
	}
	out := make([]float64, len(s.comps))
	pt := s.pointAt(idx)
	for i, c := range s.comps {
		out[i] = math.NaN()
		if c.Kind != RequirementKind || s.cfg.Floor == nil {
			continue
		}
		if f, ok := s.cfg.Floor(pt, c.Stack, c.Requirement.Metric); ok && !math.IsNaN(f) {
			out[i] = f
		}
	}
	if s.floors == nil {
		s.floors = map[[2]int][]float64{}
	}
	s.floors[idx] = out
	return out
}

// byFloor is the requirement's verdict by construction where every value
// at or above the floor f decides it ("" where none does, or f is NaN):
// for a requirement on the low side ("<=", "<") every value ≥ f fails it
// when f itself fails it (f > bound for "<=": at f = bound a value could
// equal the bound and meet; f ≥ bound for "<"); on the high side (">=",
// ">") every value ≥ f meets it when f does. The mean of values that all
// fail (meet) fails (meets) too, so the map's verdict on the mean is the
// same, with certainty rather than at a level: it spends no alpha.
func (c Comparison) byFloor(f float64) string {
	if c.Kind != RequirementKind || math.IsNaN(f) {
		return ""
	}
	ok := c.Requirement.Holds(f)
	switch {
	case lowerIsBetter(c.Requirement) && !ok:
		return string(advise.Fails)
	case !lowerIsBetter(c.Requirement) && ok:
		return string(advise.Meets)
	}
	return ""
}

// withFloor is the comparison with its metric's least value raised to
// the point's floor f (where f is above the metric's own least value),
// so that the bet on "above the bound" may stake up to 1/(bound − f)
// instead of 1/(bound − 0) (floorBetLogE). Still a test supermartingale:
// every value x is ≥ f, so for 0 ≤ λ ≤ 1/(bound − f) each factor
//
//	1 + λ (x − bound) ≥ 1 − λ (bound − f) ≥ 0,
//
// and under the null (mean ≤ bound) its expectation 1 + λ (mean − bound)
// is ≤ 1. A metric with both ends (a share in percent) keeps its ceiling:
// the bounded bet's values then lie in [f, hi] as it needs. A metric
// without bounds of its own gets the floor as its only one.
func (c Comparison) withFloor(f float64) Comparison {
	if c.Kind != RequirementKind || math.IsNaN(f) || math.IsInf(f, 0) {
		return c
	}
	switch {
	case len(c.Range) == 0:
		c.Range = []float64{f}
	case f > c.Range[0]:
		c.Range = slices.Clone(c.Range)
		c.Range[0] = f
	}
	return c
}

// floorStatuses are each stack's status by its floors alone (in the order
// of stacks): fails where a floor fails one of its requirements, meets
// where floors meet every one, "" otherwise; and the floor behind each
// (the failing requirement's, or the first requirement's; NaN: none).
func floorStatuses(stacks []string, comps []Comparison, floors []float64) (status []string, floor []float64) {
	for _, st := range stacks {
		s, f, all := "", math.NaN(), true
		for i, c := range comps {
			if c.Kind != RequirementKind || c.Stack != st {
				continue
			}
			if math.IsNaN(f) {
				f = floors[i]
			}
			switch c.byFloor(floors[i]) {
			case string(advise.Fails):
				if s != string(advise.Fails) {
					s, f = string(advise.Fails), floors[i]
				}
			case string(advise.Meets):
			default:
				all = false
			}
		}
		if s == "" && all {
			s = string(advise.Meets)
		}
		status, floor = append(status, s), append(floor, f)
	}
	return status, floor
}

// floorWhy puts a floor in words for a map's files ("NA" without one).
func floorWhy(f float64) string {
	if math.IsNaN(f) {
		return "NA"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
