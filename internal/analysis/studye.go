package analysis

import (
	"encoding/csv"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// StudyEStep is study E's Fig. 5 and Table 2 from a run's rows: the
// packet round trip's change from LTE and Wi-Fi to 5G, and at the main
// and the degraded 5G location (the report draws them).
const StudyEStep = "study-e-rtt"

// The files the step writes into the run directory (the report writes
// the same beside each figure, under the figure's name).
const (
	RTTShiftFile    = "rtt-shift.csv"
	RTTLocationFile = "rtt-location.csv"
)

// StudyERTT is the step's result: Fig. 5's cells and Table 2's rows.
type StudyERTT struct {
	Shifts    []RTTShift
	Locations []RTTLocation
}

func init() {
	Register(Step{
		Name:  StudyEStep,
		Doc:   "study E's Fig. 5 (the packet round trip's percent change from LTE and Wi-Fi to 5G, per protocol and frame size) and Table 2 (at the main and the degraded 5G location), repetitions averaged first",
		Files: []string{RTTShiftFile, RTTLocationFile},
		Compute: func(v *View, a *Analysis) error {
			s := StudyERTT{Shifts: studyERTTShifts(v.Run.Rows), Locations: studyERTTLocations(v.Run.Rows)}
			if len(s.Shifts) > 0 || len(s.Locations) > 0 {
				a.SetOutput(StudyEStep, s)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			s := a.StudyE()
			var files []string
			if len(s.Shifts) > 0 {
				if err := results.WriteAtomic(filepath.Join(dir, RTTShiftFile), func(w io.Writer) error { return WriteRTTShifts(w, s.Shifts) }); err != nil {
					return nil, err
				}
				files = append(files, RTTShiftFile)
			}
			if len(s.Locations) > 0 {
				if err := results.WriteAtomic(filepath.Join(dir, RTTLocationFile), func(w io.Writer) error { return WriteRTTLocations(w, s.Locations) }); err != nil {
					return nil, err
				}
				files = append(files, RTTLocationFile)
			}
			return files, nil
		},
	})
}

// StudyE is the step's result (empty when the run has no study E rows).
func (a *Analysis) StudyE() StudyERTT {
	if a == nil {
		return StudyERTT{}
	}
	s, _ := a.Output(StudyEStep).(StudyERTT)
	return s
}

// Study E's networks as the presets name them: the main 5G location, the
// one with degraded signal, and the two networks Fig. 5 compares 5G with.
const (
	StudyE5G         = "5g-cband"
	StudyE5GDegraded = "5g-degraded"
)

// StudyEOthers are the networks of study E's Fig. 5, each against 5G.
var StudyEOthers = []string{"lte", "wifi-ac"}

// StudyERTTField is study E's RTT as tlab takes it (packet level).
const StudyERTTField = "pkt_rtt_mean_ms"

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
	main := rttByCell(rows, StudyE5G, StudyERTTField)
	var out []RTTShift
	for _, from := range StudyEOthers {
		other := rttByCell(rows, from, StudyERTTField)
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
	main := rttByCell(rows, StudyE5G, StudyERTTField)
	deg := rttByCell(rows, StudyE5GDegraded, StudyERTTField)
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

func WriteRTTShifts(w io.Writer, shifts []RTTShift) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"from", "to", "protocol", "frame_kB", "rtt_from_ms", "rtt_5g_ms", "change_pct"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, s := range shifts {
		if err := cw.Write([]string{s.From, StudyE5G, s.Protocol, strconv.FormatFloat(s.SizeKB, 'f', -1, 64), f(s.FromMs), f(s.On5GMs), f(s.Pct)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func WriteRTTLocations(w io.Writer, locs []RTTLocation) error {
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
