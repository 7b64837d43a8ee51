package report

import (
	"math"
	"slices"
	"testing"

	"tlab/internal/results"
)

// TestStudyEFiguresDrawWhatTheProfilesWereCalibratedTo: study E's
// networks were calibrated to the spread of the client-to-server packet
// delay (docs/presets.md: "a spread of 4-5.7 ms where the study's jitter
// was 3.11-4.81"), so its jitter figure draws that statistic,
// pkt_owd_std_ms, not the mean step |ΔD|; and the study's RTT is packet
// level, so a figure draws the packet round trip (pkt_rtt_mean_ms) beside
// tlab's per-frame one.
func TestStudyEFiguresDrawWhatTheProfilesWereCalibratedTo(t *testing.T) {
	for name, field := range map[string]string{"jitter_by_size": "pkt_owd_std_ms", "pkt_rtt_by_size": "pkt_rtt_mean_ms", "rtt_by_size": "frame_rtt_p50_ms"} {
		k, ok := LookupPlot(name)
		if !ok {
			t.Errorf("no plot %s", name)
			continue
		}
		if !slices.Contains(k.Needs, field) {
			t.Errorf("plot %s draws %v, want %s", name, k.Needs, field)
		}
	}
}

func studyERow(profile, proto string, rep int, bytes, rttMs float64) results.Summary {
	return results.Summary{Cell: profile + proto, Profile: profile, Protocol: proto, Workload: "frames", Rep: rep, Seed: 1,
		Fields: []results.Field{{Name: "frame_bytes", Value: bytes}, {Name: "pkt_rtt_mean_ms", Value: rttMs}}}
}

// TestStudyEFig5AndTable2ByHand: the percent change from LTE (and Wi-Fi)
// to 5G is (RTT on 5G - RTT there) / RTT there x 100, repetitions
// averaged first; Table 2 takes each protocol's smallest and largest
// frames at both 5G locations. By hand:
//   - tcp 4.5 kB: 5G reps 14 and 16 (mean 15), LTE 20 -> (15-20)/20 = -25 %;
//     Wi-Fi 10 -> (15-10)/10 = +50 %;
//   - tcp 151.2 kB: 5G 18, LTE 24 -> -25 %; no Wi-Fi row, no cell;
//   - Table 2: tcp 4.5 kB 15 / 15.5 ms, 151.2 kB 18 / 17 ms; the
//     36.9 kB size in between is neither end.
func TestStudyEFig5AndTable2ByHand(t *testing.T) {
	rows := []results.Summary{
		studyERow("5g-cband", "tcp", 1, 4500, 14), studyERow("5g-cband", "tcp", 2, 4500, 16),
		studyERow("5g-cband", "tcp", 1, 36900, 16.5),
		studyERow("5g-cband", "tcp", 1, 151200, 18),
		studyERow("lte", "tcp", 1, 4500, 20), studyERow("lte", "tcp", 1, 151200, 24),
		studyERow("wifi-ac", "tcp", 1, 4500, 10),
		studyERow("5g-degraded", "tcp", 1, 4500, 15.5), studyERow("5g-degraded", "tcp", 1, 36900, 16),
		studyERow("5g-degraded", "tcp", 1, 151200, 17),
	}
	got := studyERTTShifts(rows)
	want := []RTTShift{
		{From: "lte", Protocol: "tcp", SizeKB: 4.5, FromMs: 20, On5GMs: 15, Pct: -25},
		{From: "lte", Protocol: "tcp", SizeKB: 151.2, FromMs: 24, On5GMs: 18, Pct: -25},
		{From: "wifi-ac", Protocol: "tcp", SizeKB: 4.5, FromMs: 10, On5GMs: 15, Pct: 50},
	}
	if len(got) != len(want) {
		t.Fatalf("Fig. 5 cells %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.From != w.From || g.Protocol != w.Protocol || math.Abs(g.SizeKB-w.SizeKB) > 1e-9 || math.Abs(g.Pct-w.Pct) > 1e-9 || g.FromMs != w.FromMs || g.On5GMs != w.On5GMs {
			t.Errorf("Fig. 5 cell %d: %+v, want %+v", i, g, w)
		}
	}
	locs := studyERTTLocations(rows)
	wantLocs := []RTTLocation{{Protocol: "tcp", SizeKB: 4.5, MainMs: 15, DegradedMs: 15.5}, {Protocol: "tcp", SizeKB: 151.2, MainMs: 18, DegradedMs: 17}}
	if len(locs) != 2 || locs[0] != wantLocs[0] || math.Abs(locs[1].SizeKB-151.2) > 1e-9 || locs[1].MainMs != 18 || locs[1].DegradedMs != 17 {
		t.Errorf("Table 2 rows %+v, want %+v", locs, wantLocs)
	}
}
