package scenario

import (
	"strings"
	"testing"

	"tlab/scenarios"
)

// requireWarnings are a scenario's warnings about requirements that no
// cell can judge, as a run and tlab validate print them.
func requireWarnings(t *testing.T, name, src string) []string {
	t.Helper()
	s, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	_, points, err := s.Expand()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []string
	for _, w := range PointWarnings(points) {
		if strings.Contains(w, "no cell of this scenario produces") {
			out = append(out, w)
		}
	}
	return out
}

// TestRequirementNoCellProducesWarns: a requirement on a metric the
// scenario's workload cannot produce in any cell is one no stack can be
// judged on. Study D's Δ+ (reconnect_p95_ms) exists only under pattern
// reconnect (docs/metrics.md: "Study D's Δ+ (pattern reconnect)"), so a
// stop-and-wait-only scenario that requires it is warned about, one that
// sweeps the pattern is not (its reconnect cells produce it), and a
// periodic loop requiring study E's frame round trip is warned about.
func TestRequirementNoCellProducesWarns(t *testing.T) {
	pubsub := "name: d\nprofiles: [wifi]\nprotocols: [mqtt-tcp, mqtt-quic]\nworkload: {type: pubsub, messages: 10}\n"
	for _, c := range []struct {
		name, src string
		warned    []string // the metrics warned about
	}{
		{"stop-and-wait", pubsub + `require: ["message_latency_p95_ms<=100", "reconnect_p95_ms<=100"]` + "\n", []string{"reconnect_p95_ms"}},
		{"reconnect", pubsub + "matrix: {workload.pattern: [reconnect]}\nrequire: [\"reconnect_p95_ms<=100\", \"completion_ms<=1000\"]\n", []string{"completion_ms"}},
		{"both patterns", pubsub + "matrix: {workload.pattern: [stop-and-wait, reconnect]}\nrequire: [\"reconnect_p95_ms<=100\", \"completion_ms<=1000\"]\n", nil},
		{"periodic", base + `require: ["delay_p99_ms<=20", "frame_rtt_p95_ms<=33"]` + "\n", []string{"frame_rtt_p95_ms"}},
	} {
		got := requireWarnings(t, c.name+".yaml", c.src)
		if len(got) != len(c.warned) {
			t.Errorf("%s: warnings %q, want one for each of %v", c.name, got, c.warned)
			continue
		}
		for i, m := range c.warned {
			if !strings.Contains(got[i], m) {
				t.Errorf("%s: warning %q, want one about %s", c.name, got[i], m)
			}
		}
	}
}

// TestPresetsRequireWhatTheyMeasure: every preset's requirements can be
// judged, each on a metric some of its cells produce (study D's parts
// that run no reconnect pattern once required Δ+).
func TestPresetsRequireWhatTheyMeasure(t *testing.T) {
	for _, name := range scenarios.Names() {
		if _, isSuite, _ := scenarios.ReadSuite(name); isSuite {
			continue
		}
		data, _ := scenarios.Read(name)
		for _, w := range requireWarnings(t, name+".yaml", string(data)) {
			t.Errorf("preset %s: %s", name, w)
		}
	}
}

// TestPlotsFixSweptValues: a plots entry may fix swept values
// ("delay_box@workload.interval=25ms", study A's Fig. 1 at d = 25 ms);
// a key the matrix does not sweep, or a value it does not take, draws
// nothing and is warned of (not refused: --set matrix=... may sweep
// other keys than a preset's figures fix); an unknown kind is refused.
func TestPlotsFixSweptValues(t *testing.T) {
	src := base + "matrix:\n  workload.interval: [5ms, 25ms]\n  workload.payload: [128, 256]\nplots: [PLOT]\n"
	for plot, want := range map[string]string{
		"delay_box@workload.interval=25ms":                        "",
		"jitter_bars@workload.interval=25ms&workload.payload=256": "",
		"delay_box@workload.interval=7ms":                         "warning",
		"delay_box@link.loss=1%":                                  "warning",
		"nonsense@workload.interval=25ms":                         "error",
	} {
		s, err := Parse("p.yaml", []byte(strings.Replace(src, "PLOT", plot, 1)))
		got := ""
		switch {
		case err != nil:
			got = "error"
		default:
			_, points, _ := s.Expand()
			for _, w := range PointWarnings(points) {
				if strings.Contains(w, "draws nothing") {
					got = "warning"
				}
			}
		}
		if got != want {
			t.Errorf("plots: [%s]: %q (%v), want %q", plot, got, err, want)
		}
	}
}
