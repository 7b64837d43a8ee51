package calibrate

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

// TestQuickCalibration runs a short calibration through real namespaces.
// Timing figures depend on the machine, so they are checked for presence and
// sanity only; tlab's targets are judged by `tlab calibrate` itself. Loss,
// which is statistics, is checked against a 5-sigma interval.
func TestQuickCalibration(t *testing.T) {
	tbtest.RequirePrivileges(t)
	r, err := Run(context.Background(), Options{Quick: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"added_latency_p50", "added_latency_p99", "release_error_5ms_p50", "release_error_5ms_p99",
		"release_error_25ms_p50", "release_error_25ms_p99", "rate_error_10mbit", "rate_error_100mbit",
		"forwarding_1400B_pps", "forwarding_64B_pps", "tcp_goodput_zero_delay",
		"loss_bernoulli_1pct", "loss_bernoulli_10pct", "loss_gilbert_elliott_study_b"}
	byName := map[string]Check{}
	for _, c := range r.Checks {
		byName[c.Name] = c
		if c.Unit == "" || c.Target == "" || math.IsNaN(c.Value) {
			t.Errorf("check %+v lacks a unit, a target or a value", c)
		}
	}
	for _, n := range want {
		if _, ok := byName[n]; !ok {
			t.Errorf("check %s missing", n)
		}
	}
	// Rate: TCP through a limiter must come near the limit on any machine.
	for _, n := range []string{"rate_error_10mbit", "rate_error_100mbit"} {
		if v := byName[n].Value; v > 10 {
			t.Errorf("%s = %.2f %%: the limiter is far off", n, v)
		}
	}
	if byName["forwarding_64B_pps"].Value < 10000 {
		t.Errorf("forwarding below 10k packets/s: %+v", byName["forwarding_64B_pps"])
	}
	// Loss, as statistics with a generous interval (30 000 packets).
	for name, p := range map[string]float64{"loss_bernoulli_1pct": 0.01, "loss_bernoulli_10pct": 0.10} {
		got := byName[name].Value / 100
		if sigma := math.Sqrt(p * (1 - p) / 20000); math.Abs(got-p) > 5*sigma {
			t.Errorf("%s realised %.4f, configured %.4f", name, got, p)
		}
	}
	if got := byName["loss_gilbert_elliott_study_b"].Value; got < 4.5 || got > 8.5 {
		t.Errorf("Gilbert-Elliott realised %.2f %%, configured 6.45 %%", got)
	}
	// The JSON form has what scripts rely on.
	b, _ := json.Marshal(r)
	var generic map[string]any
	json.Unmarshal(b, &generic)
	checks, _ := generic["checks"].([]any)
	if len(checks) != len(r.Checks) {
		t.Fatal("checks missing from JSON")
	}
	for _, k := range []string{"name", "value", "unit", "target", "pass"} {
		if _, ok := checks[0].(map[string]any)[k]; !ok {
			t.Errorf("JSON check lacks %q", k)
		}
	}
	if m, _ := generic["machine"].(map[string]any); m == nil || !strings.Contains(m["kernel"].(string), ".") {
		t.Errorf("machine missing: %v", generic["machine"])
	}
}
