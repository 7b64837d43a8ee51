package hostnoise

import (
	"encoding/json"
	"testing"
)

// FuzzProbeAnswer: whatever the probe's child writes back, the parent
// reads a whole, plausible sample or a failed one (no wake-ups), never a
// partial or impossible one; a real sample reads back as written.
func FuzzProbeAnswer(f *testing.F) {
	real, _ := json.Marshal(Sample{WindowS: 1.2, WakeP50Us: 40, WakeP99Us: 90, WakeP999Us: 900, WakeMaxUs: 2000, Wakeups: 240, StealPct: 3.5, PressurePct: 12})
	f.Add(real)
	f.Add(real[:len(real)/2])
	f.Add([]byte(`{"wakeups": 5, "window_s": 0}`))
	f.Add([]byte(`{"wakeup_p50_us": 9, "wakeup_p99_us": 1}{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := parseSample(b)
		if s.Wakeups == 0 {
			return // failed, or a probe that never woke: the count says so
		}
		if s.WindowS <= 0 || s.WakeP50Us < 0 || s.WakeP50Us > s.WakeP99Us || s.WakeP99Us > s.WakeP999Us || s.WakeP999Us > s.WakeMaxUs || s.StealPct < 0 || s.StealPct > 100 {
			t.Fatalf("accepted an impossible sample %+v from %q", s, b)
		}
	})
}

// TestParseSample: the child's own line reads back whole; a truncated,
// doubled or disordered one is a failed probe.
func TestParseSample(t *testing.T) {
	want := Sample{WindowS: 1.2, WakeP50Us: 40, WakeP99Us: 90, WakeP999Us: 900, WakeMaxUs: 2000, Wakeups: 240, StealPct: 3.5, PressurePct: 12}
	b, _ := json.Marshal(want)
	if got := parseSample(append(b, '\n')); got != want {
		t.Errorf("read %+v, wrote %+v", got, want)
	}
	for _, bad := range [][]byte{b[:len(b)-3], append(append([]byte{}, b...), b...), []byte(`{"wakeups":3,"window_s":1,"wakeup_p50_us":50,"wakeup_p99_us":20}`), []byte(`{"wakeups":3,"window_s":1,"steal_pct":140}`), []byte(`{"wakeups":3,"window_s":1,"sudo":1}`)} {
		if got := parseSample(bad); got != failedSample {
			t.Errorf("%s: read %+v", bad, got)
		}
	}
}
