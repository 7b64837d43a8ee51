package analysis

import (
	"math"
	"testing"

	"tlab/internal/results"
)

// TestReconnectIsAMeanOverRepetitionsWithItsTInterval: study D's Δ+ by
// network is each stack's mean over repetitions with a 95 % Student t
// interval. By hand: Δ+ of 10, 20 and 30 ms average 20; their standard
// deviation is 10, the standard error 10/√3 = 5.7735, and t(0.975, 2
// degrees of freedom) = 4.3027 (t-table), so the interval is 20 ± 24.841.
// A repetition without Δ+ is left out; one value alone has no interval.
func TestReconnectIsAMeanOverRepetitionsWithItsTInterval(t *testing.T) {
	d := func(net, proto string, rep int, v float64) results.Summary {
		s := results.Summary{Profile: net, Protocol: proto, Workload: "pubsub", Rep: rep, Params: []results.Param{{Key: "link.loss", Value: "1%"}}}
		s.Set(ReconnectMetric, v)
		return s
	}
	a := &Analysis{Reconnect: meansOver([]results.Summary{
		d("wan", "mqtt-quic", 1, 10), d("wan", "mqtt-quic", 2, 20), d("wan", "mqtt-quic", 3, math.NaN()), d("wan", "mqtt-quic", 4, 30),
		d("wan", "mqtt-tls", 1, 40),
	}, ReconnectMetric)}
	m, ok := a.ReconnectOf("wan", "1%", "mqtt-quic")
	if !ok || m.N != 3 || m.Mean != 20 || !(math.Abs(m.Low-(20-24.841)) > 0.001 || math.Abs(m.High-(20+24.841)) <= 0.001) {
		t.Errorf("quic on wan: %+v (found %v), want 3 repetitions, mean 20, interval 20 ± 24.841", m, ok)
	}
	if m, ok := a.ReconnectOf("wan", "1%", "mqtt-tls"); !ok || m.Mean != 40 || !math.IsNaN(m.Low) {
		t.Errorf("tls on wan: %+v (found %v), want mean 40 without an interval", m, ok)
	}
	if _, ok := a.ReconnectOf("lan", "1%", "mqtt-quic"); ok {
		t.Error("a mean on a network without rows")
	}
}
