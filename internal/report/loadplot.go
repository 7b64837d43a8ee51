package report

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
)

func init() {
	registerPlot(PlotKind{Name: "load_timeseries", Doc: "for each cell with cross traffic (first repetition): the workload's delay over time beside the cross traffic's rate, from records.csv and the cell's cross.csv",
		Needs: []string{"records", "cross_goodput_mbps"}, Draw: drawLoadSeries})
}

// crossLabel names the cross traffic's line (its colour is its own).
const crossLabel = "cross traffic (Mbit/s)"

// drawLoadSeries draws, for up to six loaded cells, the stack's median
// delay per time bin and the cross traffic's summed goodput per 100 ms:
// does the delay follow the load, and where the load starts or stops?
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
		// The delay's line is named by its protocol, so it has the
		// protocol's colour in every plot.
		pl, err := lines([]string{row.Protocol, crossLabel}, map[string]plotter.XYs{row.Protocol: cs.series, crossLabel: rate}, "time since the workload started (s; the load leads)", row.Protocol+"'s delay (ms) / load (Mbit/s)")
		if err != nil {
			return nil, err
		}
		label := p.profile + ", " + row.Protocol
		if c := comboLabel(row); c != "" {
			label += ", " + c
		}
		fig, err := render(pl, p.dir, fmt.Sprintf("%s-%d", p.stem, len(figs)+1), "Delay under load, "+label,
			"The stack's median response delay per time bin beside the cross traffic's goodput, summed over its flows, per 100 ms (first repetition).", figW, figH)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
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
