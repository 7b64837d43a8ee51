package scenario

import (
	"slices"
	"testing"

	"tlab/scenarios"
)

// TestStudyEPresetsDrawThePacketRTT: study E's RTT is packet level
// (../shared/docs/studies.md: its numbers do not fit a frame's round
// trip), so its presets draw the packet round trip (pkt_rtt_by_size)
// beside tlab's frame round trip, and the jitter figure.
func TestStudyEPresetsDrawThePacketRTT(t *testing.T) {
	for _, name := range []string{"study-e-short", "study-e-full"} {
		data, _ := scenarios.Read(name)
		s, err := Parse(name+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, plot := range []string{"pkt_rtt_by_size", "rtt_by_size", "jitter_by_size"} {
			if !slices.Contains(s.PlotsOrDefault(), plot) {
				t.Errorf("%s draws %v, want %s among them", name, s.PlotsOrDefault(), plot)
			}
		}
	}
}
