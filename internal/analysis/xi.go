package analysis

import (
	"math"
	"slices"
	"strings"

	"tlab/internal/results"
	"tlab/internal/stats"
)

// XiMetric is the summary column whose means study D's ξ divides: the
// pubsub workload's completion time Δ.
const XiMetric = "completion_ms"

func init() {
	Register(Step{
		Name: "xi",
		Doc:  "study D's ξ: each stack's mean completion time over another's on the same network and swept values, with its 95 % bootstrap interval over repetitions",
		Compute: func(v *View, a *Analysis) error {
			a.Xi = completionRatios(v.Run.Rows, v.Seed)
			return nil
		},
	})
}

// completionRatios compares, on each network and set of swept values,
// every stack's completion times over repetitions with every other's
// (stats.Compare, both orders: the report divides by the baseline the
// figure names, whichever that is). Profile names the network, Params
// the swept values, A the divisor and B the stack; rows without a
// completion time are left out.
func completionRatios(rows []results.Summary, seed uint64) []stats.Comparison {
	type group struct{ network, params string }
	var groups []group
	var protos []string
	vals := map[group]map[string][]float64{}
	for _, r := range rows {
		x := r.Float(XiMetric)
		if math.IsNaN(x) {
			continue
		}
		g := group{r.Profile, paramValues(r)}
		if vals[g] == nil {
			groups = append(groups, g)
			vals[g] = map[string][]float64{}
		}
		if !slices.Contains(protos, r.Protocol) {
			protos = append(protos, r.Protocol)
		}
		vals[g][r.Protocol] = append(vals[g][r.Protocol], x)
	}
	var out []stats.Comparison
	for _, g := range groups {
		for _, ref := range protos {
			for _, p := range protos {
				a, b := vals[g][ref], vals[g][p]
				if p == ref || len(a) == 0 || len(b) == 0 {
					continue
				}
				c := stats.Compare(a, b, seed)
				c.Profile, c.Params, c.Metric, c.A, c.B = g.network, g.params, XiMetric, ref, p
				out = append(out, c)
			}
		}
	}
	return out
}

// paramValues names a row's swept values ("5ms / 128"), as the report's
// categories do.
func paramValues(r results.Summary) string {
	var vals []string
	for _, p := range r.Params {
		vals = append(vals, p.Value)
	}
	return strings.Join(vals, " / ")
}

// XiOf is ξ of stack over ref on a network and swept values (the rows'
// parameter values joined by " / "), when both have completion times
// there.
func (a *Analysis) XiOf(network, params, ref, stack string) (stats.Comparison, bool) {
	if a == nil {
		return stats.Comparison{}, false
	}
	for _, c := range a.Xi {
		if c.Profile == network && c.Params == params && c.A == ref && c.B == stack {
			return c, true
		}
	}
	return stats.Comparison{}, false
}
