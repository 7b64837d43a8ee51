package report

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"

	"tlab/internal/analysis"
	"tlab/internal/results"
)

// Study E's networks and field, as the analysis names them.
const (
	studyE5G         = analysis.StudyE5G
	studyE5GDegraded = analysis.StudyE5GDegraded
	studyERTTField   = analysis.StudyERTTField
)

var studyEOthers = analysis.StudyEOthers

// writeBeside writes a figure's values beside it (its stem, .csv); the
// live view (no directory: in memory only) writes nothing.
func writeBeside(p panel, fill func(io.Writer) error) error {
	if p.dir == "" {
		return nil
	}
	return results.WriteAtomic(filepath.Join(p.dir, p.stem+".csv"), fill)
}

func kbLabel(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) + " kB" }

func init() {
	registerPlot(PlotKind{Name: "rtt_shift_heatmap",
		Doc:   "study E's Fig. 5: the percent change of the packet round trip (pkt_rtt_mean_ms) from LTE to 5G and from Wi-Fi to 5G, per protocol and frame size; drawn once, with the 5g-cband network, and written to rtt-shift.csv",
		Needs: []string{studyERTTField, "frame_bytes"}, Draw: drawRTTShift})
	registerPlot(PlotKind{Name: "rtt_location",
		Doc:   "study E's Table 2: the packet round trip (pkt_rtt_mean_ms) at the main (5g-cband) and the degraded (5g-degraded) 5G location, for each protocol's smallest and largest frames; drawn once, with the 5g-cband network, and written to rtt-location.csv",
		Needs: []string{studyERTTField, "frame_bytes"}, Draw: drawRTTLocation})
}

func drawRTTShift(p panel) ([]Figure, error) {
	if p.profile != studyE5G {
		return nil, nil // one figure for the run, with the 5G network's
	}
	shifts := p.run.analysis.StudyE().Shifts
	if len(shifts) == 0 {
		return nil, nil
	}
	if err := writeBeside(p, func(w io.Writer) error { return analysis.WriteRTTShifts(w, shifts) }); err != nil {
		return nil, err
	}
	var figs []Figure
	for _, from := range studyEOthers {
		var protos []string
		var sizes []float64
		val := map[string]map[float64]float64{}
		for _, s := range shifts {
			if s.From != from {
				continue
			}
			if !slices.Contains(protos, s.Protocol) {
				protos = append(protos, s.Protocol)
			}
			if !slices.Contains(sizes, s.SizeKB) {
				sizes = append(sizes, s.SizeKB)
			}
			if val[s.Protocol] == nil {
				val[s.Protocol] = map[float64]float64{}
			}
			val[s.Protocol][s.SizeKB] = s.Pct
		}
		if len(protos) == 0 {
			continue
		}
		slices.Sort(sizes)
		g := grid{cols: sizes, rows: make([]float64, len(protos)), values: make([][]float64, len(protos))}
		var colNames []string
		for _, x := range sizes {
			colNames = append(colNames, kbLabel(x))
		}
		for ri, proto := range protos {
			g.values[ri] = make([]float64, len(sizes))
			for ci, x := range sizes {
				v, ok := val[proto][x]
				if !ok {
					v = math.NaN()
				}
				g.values[ri][ci] = v
			}
		}
		pl, err := heatmap(g, "frame size", "protocol", colNames, protos)
		if err != nil {
			return nil, err
		}
		fig, err := render(pl, p.dir, p.stem+"-"+from, "Packet round trip, "+from+" to 5G (%)",
			fmt.Sprintf("Study E's Fig. 5: (RTT on %s - RTT on %s) / RTT on %s x 100 per protocol and frame size, RTT the packet round trip (pkt_rtt_mean_ms), mean over repetitions; negative: 5G faster. The study does not give its formula; this is tlab's reading. Values in %s.csv.", studyE5G, from, from, p.stem),
			8*vg.Inch, 4*vg.Inch)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

func drawRTTLocation(p panel) ([]Figure, error) {
	if p.profile != studyE5G {
		return nil, nil
	}
	locs := p.run.analysis.StudyE().Locations
	if len(locs) == 0 {
		return nil, nil
	}
	if err := writeBeside(p, func(w io.Writer) error { return analysis.WriteRTTLocations(w, locs) }); err != nil {
		return nil, err
	}
	var cats []string
	vals := map[string]map[string]float64{studyE5G: {}, studyE5GDegraded: {}}
	for _, l := range locs {
		c := l.Protocol + " " + kbLabel(l.SizeKB)
		cats = append(cats, c)
		vals[studyE5G][c], vals[studyE5GDegraded][c] = l.MainMs, l.DegradedMs
	}
	pl, err := groupedBars(cats, []string{studyE5G, studyE5GDegraded}, vals, "protocol, frame size", "packet round trip, mean (ms)")
	if err != nil {
		return nil, err
	}
	fig, err := render(pl, p.dir, p.stem, "Packet round trip at the main and the degraded 5G location",
		"Study E's Table 2: the packet round trip (pkt_rtt_mean_ms, mean over repetitions) at each protocol's smallest and largest frames, main (5g-cband) against degraded (5g-degraded) location. The study's, main / degraded: TCP 14.73 / 15.23 ms at 4.5 kB and 15.27 / 15.885 ms at 151.2 kB; QUIC 15.79 / 15.96 and 16.37 / 16.18 ms. Values in "+p.stem+".csv.",
		figW, figH)
	return []Figure{fig}, err
}
