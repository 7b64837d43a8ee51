package metrics

import (
	"math"
	"testing"
)

// TestPacketRTTIsBothDirectionsPacketDelays: study E's RTT is packet
// level (../shared/docs/studies.md: 151.2 kB arriving 0.54 ms after 4.5 kB
// would need an uplink above 2 Gbit/s for a frame's round trip), the time
// from a packet leaving the client to one coming back, as probes on both
// ends see them: the mean client-to-server packet delay plus the mean
// server-to-client one. By hand: 7.37 ms up and 7.90 ms down give
// 15.27 ms (study E's 5G figure at 151.2 kB, Table 2); without a link
// that measures the workload alone, NaN.
func TestPacketRTTIsBothDirectionsPacketDelays(t *testing.T) {
	m, ok := Lookup("pkt_rtt_mean_ms")
	if !ok {
		t.Fatal("pkt_rtt_mean_ms is not registered")
	}
	in := &Input{Up: Counters{DelayMeanMs: 7.37, DelayStdMs: 4}, Down: Counters{DelayMeanMs: 7.90, DelayStdMs: 1}}
	if got := m.Compute(in); !(math.Abs(got-15.27) <= 1e-9) {
		t.Errorf("pkt_rtt_mean_ms %v, want 7.37 + 7.90 = 15.27", got)
	}
	in.NoLink = true
	if got := m.Compute(in); !math.IsNaN(got) {
		t.Errorf("no link: pkt_rtt_mean_ms %v, want NaN", got)
	}
}
