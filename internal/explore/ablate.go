package explore

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Ablation removes one impairment: settings applied on top of a point's
// ("no jitter": link.jitter=0ms).
type Ablation struct {
	Name     string
	Settings []Setting
}

// AblationResult is a boundary's comparison re-measured at its two
// bracketing points with one impairment removed.
type AblationResult struct {
	Ablation Ablation
	// Below and Above are the comparison's verdicts at the bracketing
	// points without the impairment; Reps the repetitions each took.
	Below, Above Verdict
	// Moves says whether removing the impairment moved the boundary off
	// its interval: the two sides no longer decided apart as before.
	Moves bool
	Says  string
}

// Ablate is the lab's own method of attributing a flip to its mechanism:
// the boundary's bracketing points are measured again with one impairment
// removed at a time, each repeated until the boundary's comparison is
// decided there (or MaxReps), by the same rule and level as the map. An
// impairment whose removal leaves both sides with the same verdict (or
// either side no longer decided the way it was) moves the boundary: the
// flip needs it. One whose removal keeps the two verdicts is not the
// flip's cause. Ablations that set an explored parameter are skipped (the
// map already varies it).
func Ablate(ctx context.Context, m *Map, b Boundary, cfg Config, abl []Ablation, meas Measurer) ([]AblationResult, error) {
	cfg.Defaults()
	c := m.Comparisons[b.Comparison]
	var low, high *PointResult
	for _, p := range m.Points {
		if !math.IsNaN(b.At) && p.Values[1-b.Axis] != b.At {
			continue
		}
		if p.Values[b.Axis] == b.Low {
			low = p
		}
		if p.Values[b.Axis] == b.High {
			high = p
		}
	}
	if low == nil || high == nil {
		return nil, fmt.Errorf("explore: the boundary's bracketing points are not on the map")
	}
	var out []AblationResult
	for _, a := range abl {
		explored := slices.ContainsFunc(a.Settings, func(s Setting) bool {
			return slices.ContainsFunc(m.Params, func(p Param) bool { return p.Path == s.Path })
		})
		if explored {
			continue
		}
		sides := []*PointResult{low, high}
		reps := make([][]map[string]map[string]float64, 2)
		verdicts := make([]Verdict, 2)
		done := make([]bool, 2)
		for {
			var reqs []Request
			var which []int
			for i, p := range sides {
				if done[i] {
					continue
				}
				pt := p.Point
				pt.Settings = append(slices.Clone(p.Settings), a.Settings...)
				for r := len(reps[i]) + 1; r <= max(cfg.MinReps, len(reps[i])+1); r++ {
					reqs = append(reqs, Request{Point: pt, Rep: r})
					which = append(which, i)
				}
			}
			if len(reqs) == 0 {
				break
			}
			outs, err := meas.Measure(ctx, reqs)
			if err != nil {
				return out, err
			}
			if len(outs) != len(reqs) {
				return out, fmt.Errorf("explore: ablation %s: %d of %d repetitions came back", a.Name, len(outs), len(reqs))
			}
			for k, o := range outs {
				reps[which[k]] = append(reps[which[k]], o.Values)
			}
			for i := range sides {
				verdicts[i] = c.Judge(reps[i], cfg.Rule, cfg.Alpha, m.Tests)
				done[i] = verdicts[i].Label != Undecided || len(reps[i]) >= cfg.MaxReps
			}
		}
		r := AblationResult{Ablation: a, Below: verdicts[0], Above: verdicts[1]}
		p := m.Params[b.Axis]
		where := fmt.Sprintf("at %s and %s", p.Format(b.Low), p.Format(b.High))
		switch {
		case r.Below.Label == b.Below && r.Above.Label == b.Above:
			r.Says = fmt.Sprintf("with %s the flip stays (%s below, %s above, %s): not its cause", a.Name, b.Below, b.Above, where)
		case r.Below.Label == Undecided || r.Above.Label == Undecided:
			r.Moves = true
			r.Says = fmt.Sprintf("with %s the sides are no longer decided apart (%s below, %s above, %s): the flip needs it, or more repetitions would tell", a.Name, r.Below.Label, r.Above.Label, where)
		default:
			r.Moves = true
			r.Says = fmt.Sprintf("with %s the boundary moves off its interval (%s below, %s above, %s): the flip needs it", a.Name, r.Below.Label, r.Above.Label, where)
		}
		out = append(out, r)
	}
	return out, nil
}
