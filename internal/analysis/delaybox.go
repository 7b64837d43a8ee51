package analysis

import (
	"encoding/csv"
	"io"
	"path/filepath"
	"strconv"

	"tlab/internal/results"
)

// DelayBoxStep is study A's delay boxes: each stack's response-delay
// quantiles averaged over its repetitions, what the report's delay_box
// draws (it averages nothing itself).
const DelayBoxStep = "delay-box"

// DelayBoxFile holds the boxes, one a row (network, swept values,
// protocol, repetitions, the five averaged quantiles).
const DelayBoxFile = "delay-box.csv"

// delayBoxQuantiles are the summary's quantile columns a box averages,
// lowest first: whiskers at p5 and p95, the box from p25 to p75.
var delayBoxQuantiles = []string{"delay_p5_ms", "delay_p25_ms", "delay_p50_ms", "delay_p75_ms", "delay_p95_ms"}

var delayBoxColumns = append([]string{"network", "params", "protocol", "n"}, delayBoxQuantiles...)

// DelayBox is one stack's response-delay box on a network and set of
// swept values: each quantile the mean of its repetitions' (a NaN in one
// repetition makes that quantile NaN: the report leaves such a box out).
type DelayBox struct {
	N                      int
	P5, P25, P50, P75, P95 float64
}

// delayBoxKey is one stack on one network and set of swept values.
type delayBoxKey struct{ network, params, protocol string }

// delayBoxes are the boxes by key, in the order the rows first have each.
type delayBoxes struct {
	order []delayBoxKey
	boxes map[delayBoxKey]*DelayBox
}

func init() {
	Register(Step{
		Name:  DelayBoxStep,
		Doc:   "study A's delay boxes: each stack's response-delay quantiles (p5, p25, p50, p75, p95) averaged over its repetitions, per network and swept values",
		Files: []string{DelayBoxFile},
		Compute: func(v *View, a *Analysis) error {
			if b := averagedDelayBoxes(v.Run.Rows); b != nil {
				a.SetOutput(DelayBoxStep, b)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			b, _ := a.Output(DelayBoxStep).(*delayBoxes)
			if b == nil {
				return nil, nil
			}
			return []string{DelayBoxFile}, results.WriteAtomic(filepath.Join(dir, DelayBoxFile), b.write)
		},
	})
}

// averagedDelayBoxes averages each quantile over a stack's repetitions per
// network and swept values (joined " / "), in the rows' order, as a
// running mean: after k repetitions m, the next x gives (m·k + x)/(k+1).
// That is the order of operations study A's figures were first drawn
// with, kept so that they stay the same to the bit (it differs from the
// sum over n in the last place). Nil when no row has a delay quantile.
func averagedDelayBoxes(rows []results.Summary) *delayBoxes {
	has := false
	for _, r := range rows {
		if _, ok := r.Get(delayBoxQuantiles[2]); ok {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	d := &delayBoxes{boxes: map[delayBoxKey]*DelayBox{}}
	for _, r := range rows {
		k := delayBoxKey{r.Profile, paramValues(r), r.Protocol}
		b := d.boxes[k]
		if b == nil {
			b = &DelayBox{}
			d.boxes[k] = b
			d.order = append(d.order, k)
		}
		n := float64(b.N)
		avg := func(old float64, name string) float64 { return (old*n + r.Float(name)) / (n + 1) }
		b.P5, b.P25, b.P50, b.P75, b.P95 = avg(b.P5, "delay_p5_ms"), avg(b.P25, "delay_p25_ms"), avg(b.P50, "delay_p50_ms"), avg(b.P75, "delay_p75_ms"), avg(b.P95, "delay_p95_ms")
		b.N++
	}
	return d
}

// DelayBoxOf is a stack's delay box on a network and swept values (the
// rows' parameter values joined by " / "), when the run has one there.
func (a *Analysis) DelayBoxOf(network, params, protocol string) (DelayBox, bool) {
	if a == nil {
		return DelayBox{}, false
	}
	d, _ := a.Output(DelayBoxStep).(*delayBoxes)
	if d == nil {
		return DelayBox{}, false
	}
	b := d.boxes[delayBoxKey{network, params, protocol}]
	if b == nil {
		return DelayBox{}, false
	}
	return *b, true
}

// write writes the boxes as delay-box.csv.
func (d *delayBoxes) write(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(delayBoxColumns); err != nil {
		return err
	}
	for _, k := range d.order {
		b := d.boxes[k]
		row := []string{k.network, k.params, k.protocol, strconv.Itoa(b.N)}
		for _, q := range []float64{b.P5, b.P25, b.P50, b.P75, b.P95} {
			row = append(row, results.FormatValue(q))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
