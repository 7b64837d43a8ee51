package analysis

import (
	"encoding/csv"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"tlab/internal/results"
)

// MeansStep is each summary figure's mean over repetitions: what the
// report's bars draw (it averages nothing itself).
const MeansStep = "means"

// MeansFile holds the means, one a row (tidy: network, swept values,
// protocol, metric, how many repetitions had a value, the mean).
const MeansFile = "means.csv"

var meansColumns = []string{"network", "params", "protocol", "metric", "n", "mean"}

func init() {
	Register(Step{
		Name:  MeansStep,
		Doc:   "each summary figure's mean over a stack's repetitions on each network and swept values (finite values only: a figure not measured or beyond any bound is left out)",
		Files: []string{MeansFile},
		Compute: func(v *View, a *Analysis) error {
			a.SetOutput(MeansStep, repetitionMeans(v.Run.Rows))
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			m, _ := a.Output(MeansStep).(*means)
			if m == nil || len(m.order) == 0 {
				return nil, nil
			}
			return []string{MeansFile}, results.WriteAtomic(filepath.Join(dir, MeansFile), m.write)
		},
	})
}

// meanKey is one figure of one stack on one network and set of swept
// values.
type meanKey struct{ network, params, protocol, metric string }

// meanSum adds a figure's finite values, in the rows' order.
type meanSum struct {
	sum float64
	n   int
}

// means are the figures' sums by key, in the order the rows first have
// each.
type means struct {
	order []meanKey
	sums  map[meanKey]*meanSum
}

// repetitionMeans sums every numeric figure of the rows per network,
// swept values (joined " / ") and stack, in the rows' order, leaving out
// NaN and infinite values (a figure not measured, or beyond any bound:
// no bar shows it).
func repetitionMeans(rows []results.Summary) *means {
	m := &means{sums: map[meanKey]*meanSum{}}
	for _, r := range rows {
		params := paramValues(r)
		for _, f := range r.Fields {
			x := r.Float(f.Name)
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			k := meanKey{r.Profile, params, r.Protocol, f.Name}
			s := m.sums[k]
			if s == nil {
				s = &meanSum{}
				m.sums[k] = s
				m.order = append(m.order, k)
			}
			s.sum += x
			s.n++
		}
	}
	return m
}

// MeanOf is a figure's mean over a stack's repetitions on a network and
// swept values (the rows' parameter values joined by " / "), when one of
// them had a finite value.
func (a *Analysis) MeanOf(network, params, protocol, metric string) (float64, bool) {
	if a == nil {
		return math.NaN(), false
	}
	m, _ := a.Output(MeansStep).(*means)
	if m == nil {
		return math.NaN(), false
	}
	s := m.sums[meanKey{network, params, protocol, metric}]
	if s == nil {
		return math.NaN(), false
	}
	return s.sum / float64(s.n), true
}

// write writes the means as means.csv.
func (m *means) write(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(meansColumns); err != nil {
		return err
	}
	for _, k := range m.order {
		s := m.sums[k]
		if err := cw.Write([]string{k.network, k.params, k.protocol, k.metric, strconv.Itoa(s.n), results.FormatValue(s.sum / float64(s.n))}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
