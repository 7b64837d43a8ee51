package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// Study E's networks as the presets name them: the main 5G location, the
// one with degraded signal, and the two networks Fig. 5 compares 5G with.
const (
	studyE5G         = "5g-cband"
	studyE5GDegraded = "5g-degraded"
)

// studyEOthers are the networks of study E's Fig. 5, each against 5G.
var studyEOthers = []string{"lte", "wifi-ac"}

// studyERTTField is study E's RTT as tlab takes it (packet level).
const studyERTTField = "pkt_rtt_mean_ms"

// rttByCell averages field over repetitions per protocol and frame size
// (kB) on one network.
func rttByCell(rows []results.Summary, profile, field string) map[string]map[float64]float64 {
	vals := map[string]map[float64][]float64{}
	for _, r := range rows {
		v, x := r.Float(field), r.Float("frame_bytes")/1000
		if r.Profile != profile || math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(x) {
			continue
		}
		if vals[r.Protocol] == nil {
			vals[r.Protocol] = map[float64][]float64{}
		}
		vals[r.Protocol][x] = append(vals[r.Protocol][x], v)
	}
	out := map[string]map[float64]float64{}
	for p, bySize := range vals {
		out[p] = map[float64]float64{}
		for x, vs := range bySize {
			out[p][x] = metrics.Describe(vs).Mean
		}
	}
	return out
}

// RTTShift is one cell of study E's Fig. 5: how much the RTT changes when
// a protocol at a frame size moves from network From to 5G, in percent of
// the RTT on From: (RTT on 5G - RTT on From) / RTT on From x 100, so a
// negative value is 5G faster. The study does not give its formula; this
// is tlab's reading of "the percent difference in RTT ... from LTE to 5G".
type RTTShift struct {
	From     string
	Protocol string
	SizeKB   float64
	FromMs   float64
	On5GMs   float64
	Pct      float64
}

// studyERTTShifts computes Fig. 5 from a run's rows: every protocol and
// frame size measured on both 5G and another network.
func studyERTTShifts(rows []results.Summary) []RTTShift {
	main := rttByCell(rows, studyE5G, studyERTTField)
	var out []RTTShift
	for _, from := range studyEOthers {
		other := rttByCell(rows, from, studyERTTField)
		for _, proto := range sortedKeys(main) {
			for _, x := range sortedSizes(main[proto]) {
				ref, ok := other[proto][x]
				if !ok || ref == 0 {
					continue
				}
				g := main[proto][x]
				out = append(out, RTTShift{From: from, Protocol: proto, SizeKB: x, FromMs: ref, On5GMs: g, Pct: (g - ref) / ref * 100})
			}
		}
	}
	return out
}

// RTTLocation is one row of study E's Table 2: a protocol's RTT at a
// frame size at the main and the degraded 5G location.
type RTTLocation struct {
	Protocol   string
	SizeKB     float64
	MainMs     float64
	DegradedMs float64
}

// studyERTTLocations computes Table 2 from a run's rows: the smallest
// and the largest frame size of each protocol measured at both locations.
func studyERTTLocations(rows []results.Summary) []RTTLocation {
	main := rttByCell(rows, studyE5G, studyERTTField)
	deg := rttByCell(rows, studyE5GDegraded, studyERTTField)
	var out []RTTLocation
	for _, proto := range sortedKeys(main) {
		var both []float64
		for _, x := range sortedSizes(main[proto]) {
			if _, ok := deg[proto][x]; ok {
				both = append(both, x)
			}
		}
		if len(both) == 0 {
			continue
		}
		ends := []float64{both[0]}
		if len(both) > 1 {
			ends = append(ends, both[len(both)-1])
		}
		for _, x := range ends {
			out = append(out, RTTLocation{Protocol: proto, SizeKB: x, MainMs: main[proto][x], DegradedMs: deg[proto][x]})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sortedSizes(m map[float64]float64) []float64 {
	var xs []float64
	for x := range m {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	return xs
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
	shifts := studyERTTShifts(p.run.Rows)
	if len(shifts) == 0 {
		return nil, nil
	}
	if err := results.WriteAtomic(filepath.Join(p.dir, p.stem+".csv"), func(w io.Writer) error { return writeRTTShifts(w, shifts) }); err != nil {
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

func writeRTTShifts(w io.Writer, shifts []RTTShift) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"from", "to", "protocol", "frame_kB", "rtt_from_ms", "rtt_5g_ms", "change_pct"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, s := range shifts {
		if err := cw.Write([]string{s.From, studyE5G, s.Protocol, strconv.FormatFloat(s.SizeKB, 'f', -1, 64), f(s.FromMs), f(s.On5GMs), f(s.Pct)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func drawRTTLocation(p panel) ([]Figure, error) {
	if p.profile != studyE5G {
		return nil, nil
	}
	locs := studyERTTLocations(p.run.Rows)
	if len(locs) == 0 {
		return nil, nil
	}
	if err := results.WriteAtomic(filepath.Join(p.dir, p.stem+".csv"), func(w io.Writer) error { return writeRTTLocations(w, locs) }); err != nil {
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

func writeRTTLocations(w io.Writer, locs []RTTLocation) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"protocol", "frame_kB", "rtt_main_ms", "rtt_degraded_ms", "degraded_minus_main_ms"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, l := range locs {
		if err := cw.Write([]string{l.Protocol, strconv.FormatFloat(l.SizeKB, 'f', -1, 64), f(l.MainMs), f(l.DegradedMs), f(l.DegradedMs - l.MainMs)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
