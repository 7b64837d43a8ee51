package analysis

import (
	"math"
	"testing"

	"tlab/internal/results"
)

// TestXiIsTheRatioOfMeanCompletionTimes: study D's ξ = mean Δ of a stack
// over mean Δ of the reference on the same network and swept values
// (../shared/docs/studies.md, study D). By hand: on wan at loss 1 %,
// mqtt-tls's Δs 100, 200, 300 ms average 200, mqtt-quic's 50 and 100
// average 75: ξ(quic over tls) = 75/200 = 0.375, and over quic tls's is
// 200/75. A row without a Δ is left out, and the other loss (only tls)
// or network (only quic) gives no ratio.
func TestXiIsTheRatioOfMeanCompletionTimes(t *testing.T) {
	loss := func(v string) results.Param { return results.Param{Key: "link.loss", Value: v} }
	d := func(net, proto string, rep int, l string, v float64) results.Summary {
		s := results.Summary{Cell: net + proto + l, Profile: net, Protocol: proto, Workload: "pubsub", Rep: rep, Params: []results.Param{loss(l)}}
		s.Set(XiMetric, v)
		return s
	}
	rows := []results.Summary{
		d("wan", "mqtt-tls", 1, "1%", 100), d("wan", "mqtt-quic", 1, "1%", 50),
		d("wan", "mqtt-tls", 2, "1%", 200), d("wan", "mqtt-quic", 2, "1%", 100),
		d("wan", "mqtt-tls", 3, "1%", 300), d("wan", "mqtt-quic", 3, "1%", math.NaN()),
		d("wan", "mqtt-tls", 1, "2%", 400),
		d("lan", "mqtt-quic", 1, "1%", 10),
	}
	a := &Analysis{Xi: completionRatios(rows, 1)}
	c, ok := a.XiOf("wan", "1%", "mqtt-tls", "mqtt-quic")
	if !ok || !(math.Abs(c.Ratio-0.375) <= 1e-12) || c.NA != 3 || c.NB != 2 {
		t.Errorf("ξ(quic / tls) on wan at 1%%: %+v (found %v), want ratio 0.375 over 3 and 2 repetitions", c, ok)
	}
	if c, ok := a.XiOf("wan", "1%", "mqtt-quic", "mqtt-tls"); !ok || !(math.Abs(c.Ratio-200.0/75) <= 1e-12) {
		t.Errorf("ξ(tls / quic) on wan at 1%%: %v (found %v), want 200/75", c.Ratio, ok)
	}
	for _, k := range [][4]string{{"wan", "2%", "mqtt-tls", "mqtt-quic"}, {"lan", "1%", "mqtt-tls", "mqtt-quic"}} {
		if c, ok := a.XiOf(k[0], k[1], k[2], k[3]); ok {
			t.Errorf("%v: ratio %v, want none (one stack only)", k, c.Ratio)
		}
	}
}
