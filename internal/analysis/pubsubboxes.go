package analysis

import (
	"encoding/csv"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// PubsubBoxesStep is study D's boxes: the figures the study plots over
// repetitions, reduced to Tukey boxes (the report draws them and
// computes none).
const PubsubBoxesStep = "pubsub-boxes"

// PubsubBoxesFile holds the boxes, one a row (tidy: network, swept
// values, metric, reference, protocol, then the box's numbers).
const PubsubBoxesFile = "pubsub-boxes.csv"

// The figures boxed: Δ and the first reconnection's Δ+ as the summary has
// them, and ξ per repetition (XiPerRepetition: each repetition's Δ over
// the reference stack's mean Δ, the study's view of ξ).
const (
	ReconnectFirstMetric = "reconnect_first_ms"
	XiPerRepetition      = "xi_per_repetition"
)

// pubsubBoxesColumns are pubsub-boxes.csv's columns, in order.
var pubsubBoxesColumns = []string{"network", "params", "metric", "reference", "protocol", "n", "whisker_low", "q1", "median", "q3", "whisker_high"}

// Box is a Tukey box of one figure over one stack's repetitions on one
// network and set of swept values: the quartiles (Hyndman and Fan's type
// 7, metrics.Quantile) and whiskers at the furthest values within 1.5
// IQR of the box.
type Box struct {
	Network, Params, Metric string
	// Reference is the divisor's stack for a ratio (XiPerRepetition),
	// empty otherwise.
	Reference, Protocol string
	// N is how many values the box summarises.
	N                                       int
	WhiskerLow, Q1, Median, Q3, WhiskerHigh float64
}

func init() {
	Register(Step{
		Name:  PubsubBoxesStep,
		Doc:   "study D's boxes over repetitions: Δ, the first reconnection's Δ+ and ξ per repetition against every other stack, per network and swept values (Tukey: whiskers at the furthest values within 1.5 IQR)",
		Files: []string{PubsubBoxesFile},
		Compute: func(v *View, a *Analysis) error {
			if boxes := pubsubBoxes(v.Run.Rows); len(boxes) > 0 {
				a.SetOutput(PubsubBoxesStep, boxes)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			boxes, _ := a.Output(PubsubBoxesStep).([]Box)
			if len(boxes) == 0 {
				return nil, nil
			}
			return []string{PubsubBoxesFile}, results.WriteAtomic(filepath.Join(dir, PubsubBoxesFile), func(w io.Writer) error {
				return writeBoxes(w, boxes)
			})
		},
	})
}

// BoxOf is the box of metric for protocol on a network and swept values
// (the rows' parameter values joined by " / "), divided by ref's for a
// ratio (ref empty otherwise), when the run has one there.
func (a *Analysis) BoxOf(network, params, metric, ref, protocol string) (Box, bool) {
	if a == nil {
		return Box{}, false
	}
	boxes, _ := a.Output(PubsubBoxesStep).([]Box)
	for _, b := range boxes {
		if b.Network == network && b.Params == params && b.Metric == metric && b.Reference == ref && b.Protocol == protocol {
			return b, true
		}
	}
	return Box{}, false
}

// pubsubBoxes are the boxes of the rows, in the order the rows first have
// each network and set of swept values, then stack: the columns' boxes
// first, then ξ per repetition for every ordered pair of stacks with
// completion times there.
func pubsubBoxes(rows []results.Summary) []Box {
	var out []Box
	for _, col := range []string{XiMetric, ReconnectFirstMetric} {
		out = append(out, columnBoxes(rows, col)...)
	}
	return append(out, ratioBoxes(rows)...)
}

// groupKey is one network and set of swept values.
type groupKey struct{ network, params string }

// byStack is a column's values per group and stack, each stack's by
// repetition (a later row of the same repetition replaces an earlier), in
// the order the rows first have them; rows without a value are left out.
type byStack struct {
	groups []groupKey
	stacks map[groupKey][]string
	values map[groupKey]map[string][]float64
	reps   map[groupKey]map[string]map[int]float64
}

func gather(rows []results.Summary, col string) byStack {
	b := byStack{stacks: map[groupKey][]string{}, values: map[groupKey]map[string][]float64{}, reps: map[groupKey]map[string]map[int]float64{}}
	for _, r := range rows {
		x := r.Float(col)
		if math.IsNaN(x) {
			continue
		}
		g := groupKey{r.Profile, paramValues(r)}
		if b.values[g] == nil {
			b.groups = append(b.groups, g)
			b.values[g], b.reps[g] = map[string][]float64{}, map[string]map[int]float64{}
		}
		if !slices.Contains(b.stacks[g], r.Protocol) {
			b.stacks[g] = append(b.stacks[g], r.Protocol)
			b.reps[g][r.Protocol] = map[int]float64{}
		}
		b.values[g][r.Protocol] = append(b.values[g][r.Protocol], x)
		b.reps[g][r.Protocol][r.Rep] = x
	}
	return b
}

// columnBoxes box a summary column over each stack's repetitions.
func columnBoxes(rows []results.Summary, col string) []Box {
	b := gather(rows, col)
	var out []Box
	for _, g := range b.groups {
		for _, st := range b.stacks[g] {
			box := Tukey(b.values[g][st])
			box.Network, box.Params, box.Metric, box.Protocol = g.network, g.params, col, st
			out = append(out, box)
		}
	}
	return out
}

// ratioBoxes box ξ per repetition: for every ordered pair of stacks with
// completion times in a group, each repetition of the one over the
// other's mean (the report shows those against its reference).
func ratioBoxes(rows []results.Summary) []Box {
	b := gather(rows, XiMetric)
	var out []Box
	for _, g := range b.groups {
		for _, ref := range b.stacks[g] {
			for _, st := range b.stacks[g] {
				if st == ref {
					continue
				}
				ratios := RepetitionRatios(b.reps[g][ref], b.reps[g][st])
				if len(ratios) == 0 {
					continue
				}
				box := Tukey(ratios)
				box.Network, box.Params, box.Metric, box.Reference, box.Protocol = g.network, g.params, XiPerRepetition, ref, st
				out = append(out, box)
			}
		}
	}
	return out
}

// Tukey is the box of v (any order, left as it is): the quartiles by
// metrics.Quantile (type 7: linear between order statistics) and the
// whiskers at the furthest values within 1.5 IQR of the box (never inside
// it).
func Tukey(v []float64) Box {
	s := slices.Clone(v)
	slices.Sort(s)
	q1, med, q3 := metrics.Quantile(s, 0.25), metrics.Quantile(s, 0.5), metrics.Quantile(s, 0.75)
	lo, hi := q1-1.5*(q3-q1), q3+1.5*(q3-q1)
	b := Box{N: len(s), WhiskerLow: q1, Q1: q1, Median: med, Q3: q3, WhiskerHigh: q3}
	for _, x := range s {
		if x >= lo {
			b.WhiskerLow = math.Min(x, q1)
			break
		}
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] <= hi {
			b.WhiskerHigh = math.Max(s[i], q3)
			break
		}
	}
	return b
}

// RepetitionRatios returns, for each repetition of other in repetition
// order, its value over the mean of base's values: study D's ξ per
// repetition divides each QUIC repetition by the *average* TLS time, "so
// the variability ... reflects that seen with the QUIC protocol" alone.
// NaN values (failed repetitions) are left out on both sides; with no
// positive baseline mean there is no ratio.
func RepetitionRatios(base, other map[int]float64) []float64 {
	var sum float64
	var n int
	for _, b := range base {
		if !math.IsNaN(b) {
			sum += b
			n++
		}
	}
	if n == 0 || sum <= 0 {
		return nil
	}
	mean := sum / float64(n)
	reps := make([]int, 0, len(other))
	for rep := range other {
		reps = append(reps, rep)
	}
	slices.Sort(reps)
	var out []float64
	for _, rep := range reps {
		if v := other[rep]; !math.IsNaN(v) {
			out = append(out, v/mean)
		}
	}
	return out
}

// writeBoxes writes the boxes as pubsub-boxes.csv (numbers as the
// summaries write them).
func writeBoxes(w io.Writer, boxes []Box) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(pubsubBoxesColumns); err != nil {
		return err
	}
	for _, b := range boxes {
		rec := []string{b.Network, b.Params, b.Metric, b.Reference, b.Protocol, strconv.Itoa(b.N)}
		for _, x := range []float64{b.WhiskerLow, b.Q1, b.Median, b.Q3, b.WhiskerHigh} {
			rec = append(rec, results.FormatValue(x))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
