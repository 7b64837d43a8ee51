package analysis

import (
	"math"

	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// ReconnectMetric is the summary column of study D's Δ+: a new
// connection's set-up to the subscriber's receipt of its message.
const ReconnectMetric = "reconnect_ms"

// MeanOver is a column's mean over the repetitions of one stack on one
// network and set of swept values, with its 95 % Student t interval (NaN
// with fewer than two).
type MeanOver struct {
	Network, Params, Protocol string
	N                         int
	Mean, Low, High           float64
}

func init() {
	Register(Step{
		Name: "reconnect",
		Doc:  "study D's Δ+: each stack's mean reconnection time over repetitions on each network and swept values, with its 95 % Student t interval",
		Compute: func(v *View, a *Analysis) error {
			a.Reconnect = meansOver(v.Run.Rows, ReconnectMetric)
			return nil
		},
	})
}

// meansOver is col's mean with its interval per network, swept values
// and stack, in the order the rows first have them; rows without a value
// are left out.
func meansOver(rows []results.Summary, col string) []MeanOver {
	type key struct{ network, params, protocol string }
	var keys []key
	vals := map[key][]float64{}
	for _, r := range rows {
		x := r.Float(col)
		if math.IsNaN(x) {
			continue
		}
		k := key{r.Profile, paramValues(r), r.Protocol}
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = append(vals[k], x)
	}
	var out []MeanOver
	for _, k := range keys {
		v := vals[k]
		lo, hi := stats.MeanInterval(v, 0.95)
		out = append(out, MeanOver{Network: k.network, Params: k.params, Protocol: k.protocol, N: len(v), Mean: metrics.Describe(v).Mean, Low: lo, High: hi})
	}
	return out
}

// ReconnectOf is a stack's mean Δ+ on a network and swept values (the
// rows' parameter values joined by " / "), when it has one there.
func (a *Analysis) ReconnectOf(network, params, protocol string) (MeanOver, bool) {
	if a == nil {
		return MeanOver{}, false
	}
	for _, m := range a.Reconnect {
		if m.Network == network && m.Params == params && m.Protocol == protocol {
			return m, true
		}
	}
	return MeanOver{}, false
}
