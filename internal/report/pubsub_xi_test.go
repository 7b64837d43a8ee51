package report

import (
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

// TestXiPerRepetitionPairsTheSameRepetition: the study's ξ box is one
// ratio per repetition, each protocol's Δ over the baseline's Δ of the
// same repetition (same seed, same losses): Δs of 100 and 200 ms against
// 50 and 400 give 0.5 and 2, not 450/300; a repetition one side lacks
// is left out.
func TestXiPerRepetitionPairsTheSameRepetition(t *testing.T) {
	got := repetitionRatios(map[int]float64{1: 100, 2: 200, 3: 300}, map[int]float64{1: 50, 2: 400, 4: 10})
	if len(got) != 2 || got[0] != 0.5 || got[1] != 2 {
		t.Errorf("ratios %v, want [0.5 2]", got)
	}
}
