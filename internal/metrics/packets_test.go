package metrics

import (
	"math"
	"testing"
)

// TestEachPacketMetricReadsItsOwnCounter: every packet metric is the
// client-to-server counter of its name, not another one nor the other
// direction's. The counters are given distinct values, up 1 to 7 and down
// 101 to 107, so that reading any other field shows; without a link of
// the workload's own (NoLink) every one is NaN.
func TestEachPacketMetricReadsItsOwnCounter(t *testing.T) {
	in := &Input{
		Up: Counters{DelayMeanMs: 1, DelayP50Ms: 2, DelayP99Ms: 3, DelayStdMs: 4, DelayStepMs: 5,
			QueuedDelayMeanMs: 6, QueuedDelayP99Ms: 7},
		Down: Counters{DelayMeanMs: 101, DelayP50Ms: 102, DelayP99Ms: 103, DelayStdMs: 104, DelayStepMs: 105,
			QueuedDelayMeanMs: 106, QueuedDelayP99Ms: 107},
	}
	want := map[string]float64{
		"pkt_owd_mean_ms":        1,
		"pkt_owd_p50_ms":         2,
		"pkt_owd_p99_ms":         3,
		"pkt_owd_std_ms":         4,
		"pkt_jitter_ms":          5,
		"pkt_owd_queued_mean_ms": 6,
		"pkt_owd_queued_p99_ms":  7,
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	got := compute(t, in, names...)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v (its own up counter)", name, got[name], w)
		}
	}
	in.NoLink = true
	for name, v := range compute(t, in, names...) {
		if !math.IsNaN(v) {
			t.Errorf("%s without a link of its own = %v, want NaN", name, v)
		}
	}
}
