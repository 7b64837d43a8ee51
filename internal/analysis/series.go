package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// Point is one point of a line the report draws.
type Point struct{ X, Y float64 }

// CellSeries is what the report's record plots draw of one cell: the
// distribution of its measured record delays (201 quantiles, X the delay
// in ms, Y the fraction), its tail (the complementary distribution, for a
// log axis), and its delay over time (X the send time in s, Y the median
// delay of the records sent in each of SeriesBins bins, and their largest
// in Peaks: a median hides the spikes a latency reader looks for).
type CellSeries struct {
	CDF    []Point
	CCDF   []Point
	Series []Point
	Peaks  []Point
	// Samples are the records themselves (send time, delay) in time
	// order, for the latency-under-load view's dots: every one up to
	// MaxSamples, else every k-th (the view draws the Peaks beside them,
	// so a thinning cannot hide a spike).
	Samples []Point
}

// MaxSamples bounds the dots of one cell's latency-under-load view (a
// 10 ms loop for a minute is 6000 records; a plot of more is ink).
const MaxSamples = 4000

// CCDFStepsPerDecade is how finely the tail is drawn: points at
// exceedance probabilities 10^(-k/CCDFStepsPerDecade), from 1 down to one
// record in the cell's count (1/n, the rarest event n records can show).
const CCDFStepsPerDecade = 10

// SeriesBins is how many time bins a cell's delay-over-time line has:
// each point is the median delay of the requests sent in its bin, so that
// four protocols' lines stay apart and readable (raw points of several
// protocols drawn over one another were not).
const SeriesBins = 40

func init() {
	Register(Step{
		Name:    "series",
		Doc:     "each cell's measured record delays, reduced to what the report's record plots draw: their distribution and their median over time",
		Columns: []string{"delay_ms", "sent_ms"},
		Compute: func(v *View, a *Analysis) error {
			if !v.HasRecords() {
				return nil
			}
			s, err := cellSeries(v)
			if errors.Is(err, ErrNoColumn) {
				return nil // records of another kind: nothing to draw
			}
			if err != nil {
				return fmt.Errorf("record series: %w", err)
			}
			a.Series = s
			return nil
		},
	})
}

// cellSeries reduces each cell's records as they come by (records.csv
// holds a cell's records together): the warm-up and what was not
// measured left out.
func cellSeries(v *View) (map[string]*CellSeries, error) {
	out := map[string]*CellSeries{}
	var cur string
	var delays []float64
	var pts []Point
	finish := func() {
		if cur == "" {
			return
		}
		out[cur] = reduceSeries(delays, pts)
		delays, pts = delays[:0], nil
	}
	err := v.Records([]string{"delay_ms", "sent_ms"}, func(row results.RecordRow) error {
		if row.Cell != cur {
			finish()
			cur = row.Cell
		}
		d, s := row.Values[0], row.Values[1]
		if row.Warmup || !results.Measured(d) || !results.Measured(s) {
			return nil
		}
		delays = append(delays, d)
		pts = append(pts, Point{X: s / 1000, Y: d})
		return nil
	})
	if err != nil {
		return nil, err
	}
	finish()
	return out, nil
}

// reduceSeries is one cell's CellSeries from its delays and (send time,
// delay) points.
func reduceSeries(delays []float64, pts []Point) *CellSeries {
	cs := &CellSeries{}
	s := slices.Clone(delays)
	slices.Sort(s)
	for i := 0; i <= 200 && len(s) > 0; i++ {
		q := float64(i) / 200
		cs.CDF = append(cs.CDF, Point{X: metrics.Quantile(s, q), Y: q})
	}
	cs.CCDF = ccdf(s)
	slices.SortFunc(pts, func(a, b Point) int { return int(math.Copysign(1, a.X-b.X)) })
	if len(pts) == 0 {
		return cs
	}
	cs.Samples = thin(pts, MaxSamples)
	t0, t1 := pts[0].X, pts[len(pts)-1].X
	width := math.Max((t1-t0)/SeriesBins, 1e-9)
	var bin []float64
	flush := func(x float64) {
		if len(bin) > 0 {
			slices.Sort(bin)
			cs.Series = append(cs.Series, Point{X: x, Y: metrics.Quantile(bin, 0.5)})
			cs.Peaks = append(cs.Peaks, Point{X: x, Y: bin[len(bin)-1]})
			bin = bin[:0]
		}
	}
	cur := 0
	for _, p := range pts {
		b := min(int((p.X-t0)/width), SeriesBins-1)
		if b != cur {
			flush(t0 + (float64(cur)+0.5)*width)
			cur = b
		}
		bin = append(bin, p.Y)
	}
	flush(t0 + (float64(cur)+0.5)*width)
	return cs
}

// ccdf is the complementary distribution of sorted delays: Y the
// probability that a delay exceeds X, at CCDFStepsPerDecade points a
// decade from 1 down to 1/n (X the delay's quantile at 1 − Y, as the CDF
// interpolates). Below 1/n the records say nothing, so the line stops
// there rather than fall to zero, which a log axis cannot show.
func ccdf(sorted []float64) []Point {
	n := len(sorted)
	if n == 0 {
		return nil
	}
	var out []Point
	for k := 0; ; k++ {
		p := math.Pow(10, -float64(k)/CCDFStepsPerDecade)
		if p < 1/float64(n)*(1-1e-12) {
			break
		}
		out = append(out, Point{X: metrics.Quantile(sorted, 1-p), Y: p})
	}
	return out
}

// thin returns at most limit of the time-ordered points: all of them when
// they fit, else every k-th (k the smallest stride that fits).
func thin(pts []Point, limit int) []Point {
	if len(pts) <= limit {
		return slices.Clone(pts)
	}
	stride := (len(pts) + limit - 1) / limit
	out := make([]Point, 0, limit)
	for i := 0; i < len(pts); i += stride {
		out = append(out, pts[i])
	}
	return out
}
