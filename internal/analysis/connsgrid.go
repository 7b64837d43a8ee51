package analysis

import (
	"encoding/csv"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// ConnsGridStep is study A's connections heatmap: connections per 1000
// requests averaged by request interval and payload, for each stack that
// opened more than one connection in a cell (the report draws the grid
// and averages nothing itself).
const ConnsGridStep = "conns-grid"

// ConnsGridFile holds the grids, one cell of a grid a row.
const ConnsGridFile = "conns-grid.csv"

// connsPlotKind is the report's plot kind the grids are for: a run that
// asks for it at fixed swept values (conns_heatmap@key=value) gets a grid
// over those rows too.
const connsPlotKind = "conns_heatmap"

var connsGridColumns = []string{"network", "fixed", "protocol", "interval_ms", "req_size", "n", "conns_per_1000"}

// ConnsGrid is one stack's connections per 1000 requests on a network,
// by request interval (columns) and payload (rows), both ascending: each
// value the mean over the rows at that interval and payload that have
// one, NaN where none has.
type ConnsGrid struct {
	Intervals, Payloads []float64
	// Means[payload][interval]; N the number of values behind each.
	Means [][]float64
	N     [][]int
}

// connsGridKey is one stack's grid on a network over the rows swept at
// the fixed values (FixedKey; "" for every row).
type connsGridKey struct{ network, fixed, protocol string }

type connsGrids struct {
	order []connsGridKey
	grids map[connsGridKey]*ConnsGrid
}

func init() {
	Register(Step{
		Name:  ConnsGridStep,
		Doc:   "study A's connections heatmap: conns_per_1000 averaged by interval_ms and req_size per network, for each stack that opened more than one connection in a cell (and for each conns_heatmap@key=value the run asks for, over those rows)",
		Files: []string{ConnsGridFile},
		Compute: func(v *View, a *Analysis) error {
			if g := connsGridsOf(v.Run.Rows, connsFixes(v.Run.Manifest)); g != nil {
				a.SetOutput(ConnsGridStep, g)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			g, _ := a.Output(ConnsGridStep).(*connsGrids)
			if g == nil {
				return nil, nil
			}
			return []string{ConnsGridFile}, results.WriteAtomic(filepath.Join(dir, ConnsGridFile), g.write)
		},
	})
}

// FixedKey names the swept values a figure fixes (key=value joined by
// &, as after a plot kind's @), "" for none.
func FixedKey(fixed []results.Param) string {
	var parts []string
	for _, f := range fixed {
		parts = append(parts, f.Key+"="+f.Value)
	}
	return strings.Join(parts, "&")
}

// connsFixes are the sets of fixed values the run's conns_heatmap figures
// ask for, every row's (nil) first.
func connsFixes(m *results.Manifest) [][]results.Param {
	out := [][]results.Param{nil}
	if m == nil {
		return out
	}
	for _, p := range m.Plots {
		spec, err := results.ParsePlotSpec(p)
		if err != nil || spec.Kind != connsPlotKind || len(spec.Fixed) == 0 {
			continue
		}
		if !slices.ContainsFunc(out, func(f []results.Param) bool { return FixedKey(f) == FixedKey(spec.Fixed) }) {
			out = append(out, spec.Fixed)
		}
	}
	return out
}

// connsGridsOf makes the grids of every network and stack, for each set
// of fixed values. Nil when no row has conns_per_1000.
func connsGridsOf(rows []results.Summary, fixes [][]results.Param) *connsGrids {
	if !slices.ContainsFunc(rows, func(r results.Summary) bool { _, ok := r.Get("conns_per_1000"); return ok }) {
		return nil
	}
	g := &connsGrids{grids: map[connsGridKey]*ConnsGrid{}}
	for _, fixed := range fixes {
		spec := results.PlotSpec{Kind: connsPlotKind, Fixed: fixed}
		var networks, protocols []string
		byNetwork := map[string][]results.Summary{}
		for _, r := range rows {
			if !spec.Keeps(r) {
				continue
			}
			if !slices.Contains(networks, r.Profile) {
				networks = append(networks, r.Profile)
			}
			if !slices.Contains(protocols, r.Protocol) {
				protocols = append(protocols, r.Protocol)
			}
			byNetwork[r.Profile] = append(byNetwork[r.Profile], r)
		}
		for _, network := range networks {
			for _, proto := range protocols {
				if grid := connsGridOf(byNetwork[network], proto); grid != nil {
					k := connsGridKey{network, FixedKey(fixed), proto}
					g.grids[k] = grid
					g.order = append(g.order, k)
				}
			}
		}
	}
	return g
}

// opensConnections tells whether proto opened more than one connection in
// a measured window of any of the rows: a client that keeps one
// connection has nothing to show on a connections heatmap.
func opensConnections(rows []results.Summary, proto string) bool {
	for _, r := range rows {
		if r.Protocol == proto && r.Float("conns_per_1000")*r.Float("requests")/1000 > 1.5 {
			return true
		}
	}
	return false
}

// connsGridOf is proto's grid over one network's rows: nil when it kept
// one connection throughout, or when no row has a value.
func connsGridOf(rows []results.Summary, proto string) *ConnsGrid {
	if !opensConnections(rows, proto) {
		return nil
	}
	var ivs, pls []float64
	val := map[[2]float64][]float64{}
	for _, r := range rows {
		c := r.Float("conns_per_1000")
		if r.Protocol != proto || math.IsNaN(c) {
			continue
		}
		iv, pl := r.Float("interval_ms"), r.Float("req_size")
		if !slices.Contains(ivs, iv) {
			ivs = append(ivs, iv)
		}
		if !slices.Contains(pls, pl) {
			pls = append(pls, pl)
		}
		k := [2]float64{iv, pl}
		val[k] = append(val[k], c)
	}
	if len(ivs) == 0 {
		return nil
	}
	slices.Sort(ivs)
	slices.Sort(pls)
	grid := &ConnsGrid{Intervals: ivs, Payloads: pls, Means: make([][]float64, len(pls)), N: make([][]int, len(pls))}
	for ri, pl := range pls {
		grid.Means[ri], grid.N[ri] = make([]float64, len(ivs)), make([]int, len(ivs))
		for ci, iv := range ivs {
			vs := val[[2]float64{iv, pl}]
			grid.N[ri][ci] = len(vs)
			if len(vs) == 0 {
				grid.Means[ri][ci] = math.NaN()
				continue
			}
			// metrics.Describe sums the sorted values: the mean the
			// heatmap has always shown.
			grid.Means[ri][ci] = metrics.Describe(vs).Mean
		}
	}
	return grid
}

// ConnsGridOf is proto's connections grid on a network over the rows
// swept at fixed (FixedKey; "" for every row), when it opened more than
// one connection in one of them.
func (a *Analysis) ConnsGridOf(network, fixed, protocol string) (*ConnsGrid, bool) {
	if a == nil {
		return nil, false
	}
	g, _ := a.Output(ConnsGridStep).(*connsGrids)
	if g == nil {
		return nil, false
	}
	grid := g.grids[connsGridKey{network, fixed, protocol}]
	return grid, grid != nil
}

// write writes the grids as conns-grid.csv, interval by interval within
// each payload.
func (g *connsGrids) write(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(connsGridColumns); err != nil {
		return err
	}
	for _, k := range g.order {
		grid := g.grids[k]
		for ri, pl := range grid.Payloads {
			for ci, iv := range grid.Intervals {
				row := []string{k.network, k.fixed, k.protocol, results.FormatValue(iv), results.FormatValue(pl),
					strconv.Itoa(grid.N[ri][ci]), results.FormatValue(grid.Means[ri][ci])}
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
