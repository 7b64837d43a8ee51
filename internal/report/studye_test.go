package report

import (
	"slices"
	"testing"
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
