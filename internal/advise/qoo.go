package advise

import (
	"encoding/json"
	"math"
	"strings"

	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// Outcome is a stack's Quality of Outcome on one network against one
// requirement profile (draft-ietf-ippm-qoo-09): the mean score over the
// repetitions, 0 (unacceptable) to 100 (optimal), with its 95 % interval
// (Student's t; none with fewer than MinRepetitions), the mean latency,
// loss and throughput components (the last the share of repetitions, as a
// percentage, that met the profile's minimum throughput), and what
// limited the score most often.
type Outcome struct {
	Profile    string  `json:"profile"`
	Score      float64 `json:"score"`
	Low        float64 `json:"ci_low"`
	High       float64 `json:"ci_high"`
	N          int     `json:"repetitions"`
	Latency    float64 `json:"latency"`
	Loss       float64 `json:"loss"`
	Throughput float64 `json:"throughput"`
	Limit      string  `json:"limited_by"`
}

// MarshalJSON writes an interval that could not be computed as null.
func (o Outcome) MarshalJSON() ([]byte, error) {
	type plain Outcome
	orNull := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		Low  *float64 `json:"ci_low"`
		High *float64 `json:"ci_high"`
	}{plain(o), orNull(o.Low), orNull(o.High)})
}

// WithQoO sets each stack's Outcome from its cells' scores (cell → score,
// qoo.CellScores) against the profile named profile.
func WithQoO(answers []Answer, rows []results.Summary, profile string, scores map[string]qoo.Result) {
	for i := range answers {
		a := &answers[i]
		for j := range a.Stacks {
			s := &a.Stacks[j]
			var v, lat, loss, thr []float64
			limits := map[string]int{}
			for _, r := range rows {
				if r.Profile != a.Profile || r.Protocol != s.Protocol || paramsOf(r) != a.Params {
					continue
				}
				if sc, ok := scores[r.Cell]; ok {
					v, lat, loss, thr = append(v, sc.Score), append(lat, sc.Latency), append(loss, sc.Loss), append(thr, sc.Throughput)
					limits[sc.Limit]++
				}
			}
			if len(v) == 0 {
				continue
			}
			o := &Outcome{Profile: profile, Score: mean(v), Latency: mean(lat), Loss: mean(loss), Throughput: mean(thr), N: len(v), Low: math.NaN(), High: math.NaN()}
			if len(v) >= MinRepetitions {
				o.Low, o.High = stats.MeanInterval(v, 0.95)
				// A score is bounded: so is its interval.
				o.Low, o.High = math.Max(o.Low, 0), math.Min(o.High, 100)
			}
			for l, n := range limits {
				if n > limits[o.Limit] || n == limits[o.Limit] && l < o.Limit {
					o.Limit = l
				}
			}
			s.QoO = o
		}
	}
}

// Skeleton groups rows into answers as Evaluate does, with no requirement
// to check: the stacks alone, for a QoO score without a hard bound.
func Skeleton(rows []results.Summary) []Answer {
	var out []Answer
	index := map[[2]string]int{}
	for _, r := range rows {
		k := [2]string{r.Profile, paramsOf(r)}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Answer{Profile: r.Profile, Params: k[1], Summary: "no requirement given: the Quality of Outcome alone"})
		}
		found := false
		for _, s := range out[i].Stacks {
			found = found || s.Protocol == r.Protocol
		}
		if !found {
			out[i].Stacks = append(out[i].Stacks, Stack{Protocol: r.Protocol, FailedPct: meanOf(rowsOf(rows, r.Profile, k[1], r.Protocol), FailedMetric)})
		}
	}
	return out
}

func rowsOf(rows []results.Summary, profile, params, protocol string) []results.Summary {
	var out []results.Summary
	for _, r := range rows {
		if r.Profile == profile && r.Protocol == protocol && paramsOf(r) == params {
			out = append(out, r)
		}
	}
	return out
}

// paramsOf is a row's swept values as Evaluate keys them.
func paramsOf(r results.Summary) string {
	var vals []string
	for _, p := range r.Params {
		vals = append(vals, p.Value)
	}
	return strings.Join(vals, " / ")
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
