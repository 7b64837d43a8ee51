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
