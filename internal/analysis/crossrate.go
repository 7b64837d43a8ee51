package analysis

import (
	"math"
	"path/filepath"
	"sort"

	"tlab/internal/cross"
	"tlab/internal/results"
)

func init() {
	Register(Step{
		Name: "cross-rate",
		Doc:  "for each cell with cross traffic (first repetition): the cross traffic's goodput summed over its flows per 100 ms, from the cell's cross.csv",
		Compute: func(v *View, a *Analysis) error {
			a.CrossRate = crossRates(v.Run)
			return nil
		},
	})
}

// crossRates reads the cross.csv of each first-repetition cell that ran
// cross traffic; a cell without its file (a merged or copied run) or
// whose file does not read has none.
func crossRates(r *results.Run) map[string][]Point {
	var out map[string][]Point
	for _, row := range r.Rows {
		if row.Rep > 1 || !(row.Float("cross_flows") > 0) {
			continue
		}
		rate, err := crossRate(filepath.Join(results.CellDir(r.Dir, row.Cell), "cross.csv"))
		if err != nil || len(rate) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]Point{}
		}
		out[row.Cell] = rate
	}
	return out
}

// crossRate reads a cell's cross.csv into the load's total goodput per
// bin: (seconds, Mbit/s).
func crossRate(path string) ([]Point, error) {
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
	out := make([]Point, len(keys))
	for i, k := range keys {
		out[i].X, out[i].Y = float64(k)/10, sum[k]
	}
	return out, nil
}
