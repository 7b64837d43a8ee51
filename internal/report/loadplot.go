package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot/plotter"

	"tlab/internal/cross"
	"tlab/internal/results"
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
		rate, err := crossRate(filepath.Join(results.CellDir(p.run.Dir, row.Cell), "cross.csv"))
		if err != nil || cs == nil || len(rate) == 0 {
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

// crossRate reads a cell's cross.csv into the load's total goodput per
// bin: (seconds, Mbit/s).
func crossRate(path string) (plotter.XYs, error) {
	bins, err := cross.ReadLog(path)
	if err != nil {
		return nil, err
	}
	sum := map[int]float64{}
	for _, b := range bins {
		sum[int(math.Round(b.TimeMs/100))] += b.GoodputMbps
	}
	keys := make([]int, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make(plotter.XYs, len(keys))
	for i, k := range keys {
		out[i].X, out[i].Y = float64(k)/10, sum[k]
	}
	return out, nil
}
