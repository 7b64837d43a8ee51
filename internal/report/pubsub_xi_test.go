package report

import (
	"math"
	"testing"

	"tlab/internal/results"
)

// TestXiDividesByTheNamedBaseline: study D's ξ divides by the scenario's
// baseline (mqtt-tls), not by whichever protocol is listed first; only a
// scenario that names none (or one that did not run) falls back to the
// first, and the figure says so.
func TestXiDividesByTheNamedBaseline(t *testing.T) {
	protos := []string{"mqtt-tcp", "mqtt-tls", "mqtt-quic"}
	if ref, named := xiReference(&results.Manifest{Baseline: "mqtt-tls"}, protos); ref != "mqtt-tls" || !named {
		t.Errorf("baseline mqtt-tls: ξ against %s (named %v)", ref, named)
	}
	for _, m := range []*results.Manifest{nil, {}, {Baseline: "h3"}} {
		if ref, named := xiReference(m, protos); ref != "mqtt-tcp" || named {
			t.Errorf("%+v: ξ against %s (named %v), want the first listed, said to be so", m, ref, named)
		}
	}
}

// TestXiPerRepetitionDividesByTheBaselineMean: the study's ξ box is one
// ratio per repetition of the protocol, each over the baseline's *average*
// Δ ("as we divide by the average completion time of TCP, the variability
// of the corresponding results reflects that seen with the QUIC protocol",
// ../shared/docs/studies.md, study D), so the spread is the protocol's
// alone. By hand: the baseline's Δs 100, 200 and 300 ms average 200 ms;
// the protocol's 50, 400 and 10 ms give 0.25, 2 and 0.05 (in repetition
// order 1, 2, 4), where dividing by the same repetition would give 0.5 and
// 2 and drop repetition 4. A NaN Δ (a failed repetition) is left out on
// either side: the baseline's 100 and 300 with a NaN average 200 still.
func TestXiPerRepetitionDividesByTheBaselineMean(t *testing.T) {
	want := []float64{0.25, 2, 0.05}
	for _, base := range []map[int]float64{
		{1: 100, 2: 200, 3: 300},
		{1: 100, 2: math.NaN(), 3: 300, 5: 200},
	} {
		got := repetitionRatios(base, map[int]float64{1: 50, 2: 400, 4: 10, 6: math.NaN()})
		if len(got) != len(want) {
			t.Errorf("base %v: ratios %v, want %v", base, got, want)
			continue
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("base %v: ratios %v, want %v", base, got, want)
				break
			}
		}
	}
	if got := repetitionRatios(map[int]float64{1: math.NaN()}, map[int]float64{1: 50}); len(got) != 0 {
		t.Errorf("no baseline Δ: ratios %v, want none", got)
	}
}
