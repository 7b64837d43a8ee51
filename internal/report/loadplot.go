package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

func init() {
	registerPlot(PlotKind{Name: "load_timeseries", Doc: "for each cell with cross traffic (first repetition): the workload's delay over time beside the cross traffic's rate, from records.csv and the cell's cross.csv",
		Needs: []string{"records", "cross_goodput_mbps"}, Draw: drawLoadSeries})
}

// crossLabel names the cross traffic's line (its colour is its own).
const crossLabel = "cross traffic (Mbit/s)"

// drawLoadSeries draws, for up to six loaded cells, the latency under
// load as flent and crusader draw it: the cross traffic's summed goodput
// per 100 ms above, and below, on the same time axis, every response
// delay as a dot with the median per time bin as a line. Does the delay
// follow the load, and where does the load start or stop?
func drawLoadSeries(p panel) ([]Figure, error) {
	var figs []Figure
	for _, row := range p.rows {
		if len(figs) == 6 {
			break
		}
		if row.Rep > 1 || !(row.Float("cross_flows") > 0) {
			continue
		}
		cs := p.run.cellSeriesOf(row)
		rate := p.run.crossRateOf(row.Cell)
		if cs == nil || len(rate) == 0 {
			continue // a cell without its files (a merged or copied run)
		}
		load, latency, err := loadPlots(row.Protocol, rate, cs)
		if err != nil {
			return nil, err
		}
		label := p.profile + ", " + row.Protocol
		if c := comboLabel(row); c != "" {
			label += ", " + c
		}
		fig, err := renderStacked([]*plot.Plot{load, latency}, p.dir, fmt.Sprintf("%s-%d", p.stem, len(figs)+1), "Delay under load, "+label,
			"Above, the cross traffic's goodput summed over its flows per 100 ms; below, on the same time axis, every response delay of the stack (dots) and their median per time bin (line) (first repetition).", figW, figH*3/2)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

// loadPlots are the two panels of a latency-under-load figure: the load
// and the latency, their time axes set to one range.
func loadPlots(protocol string, rate plotter.XYs, cs *cellSeries) (load, latency *plot.Plot, err error) {
	if load, err = lines([]string{crossLabel}, map[string]plotter.XYs{crossLabel: rate}, "", "load (Mbit/s)"); err != nil {
		return nil, nil, err
	}
	load.Y.Min = 0
	if latency, err = lines([]string{protocol}, map[string]plotter.XYs{protocol: cs.series}, "time since the workload started (s; the load leads)", "response delay (ms)"); err != nil {
		return nil, nil, err
	}
	// Every sample, and each bin's slowest (a thinned long cell's
	// samples may have skipped it).
	for _, dots := range []plotter.XYs{cs.samples, cs.peaks} {
		if err := addPeaks(latency, []string{protocol}, map[string]plotter.XYs{protocol: dots}); err != nil {
			return nil, nil, err
		}
	}
	lo, hi := math.Min(load.X.Min, latency.X.Min), math.Max(load.X.Max, latency.X.Max)
	load.X.Min, load.X.Max, latency.X.Min, latency.X.Max = lo, hi, lo, hi
	return load, latency, nil
}

// crossRateOf is the analysis's cross traffic rate of a cell as plot
// points (none without an analysis or cross.csv).
func (r *Run) crossRateOf(cell string) plotter.XYs {
	if r.analysis == nil {
		return nil
	}
	pts := r.analysis.CrossRate[cell]
	if len(pts) == 0 {
		return nil
	}
	out := make(plotter.XYs, len(pts))
	for i, p := range pts {
		out[i] = plotter.XY{X: p.X, Y: p.Y}
	}
	return out
}
