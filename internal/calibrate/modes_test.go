package calibrate

import (
	"testing"

	"tlab/internal/emu"
)

// TestRecommendMode checks the decision rule against cases worked by hand
// from RecommendMode's comment, with the target p99 of 100 µs: of the
// modes whose release error p99 is at most 100 µs, the cheapest in CPU;
// when none is, the cheapest of those within 100 µs of the most accurate;
// ties to adaptive, then sleep, then busy.
func TestRecommendMode(t *testing.T) {
	m := func(mode string, p99, cpu float64) ModeMeasurement {
		return ModeMeasurement{Mode: mode, ReleaseP99Us: p99, CPUPct: cpu}
	}
	const a, s, b = emu.ModeAdaptive, emu.ModeSleep, emu.ModeBusy
	for _, c := range []struct {
		name string
		ms   []ModeMeasurement
		want string
	}{
		// All three meet 100 µs: adaptive costs 1 %, the least.
		{"quiet host", []ModeMeasurement{m(a, 40, 1), m(s, 45, 3), m(b, 20, 100)}, a},
		// Only busy meets 100 µs (60 ≤ 100; 300 and 180 do not).
		{"only busy accurate", []ModeMeasurement{m(a, 300, 2), m(s, 180, 5), m(b, 60, 100)}, b},
		// Adaptive (80) and sleep (90) meet it; sleep's 9 % < 12 %.
		{"sleep cheaper", []ModeMeasurement{m(a, 80, 12), m(s, 90, 9), m(b, 30, 100)}, s},
		// Exactly at the target meets it.
		{"at the target", []ModeMeasurement{m(a, 100, 1), m(b, 20, 100)}, a},
		// None meets it; the best is busy at 4950, and within 100 µs
		// of it (≤ 5050): busy and adaptive (5000); adaptive is cheaper.
		{"loaded host, adaptive within reach", []ModeMeasurement{m(a, 5000, 12), m(s, 9000, 15), m(b, 4950, 60)}, a},
		// None meets it; within 5100 of busy's 5000 only busy itself.
		{"loaded host, adaptive too far", []ModeMeasurement{m(a, 5200, 12), m(s, 9000, 15), m(b, 5000, 60)}, b},
		// Equal CPU, both accurate: adaptive before busy, whatever the
		// order given.
		{"tie", []ModeMeasurement{m(b, 50, 5), m(a, 50, 5)}, a},
	} {
		if got := RecommendMode(c.ms, 500); got.Mode != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, got.Mode, got.Reason, c.want)
		}
	}
	if got := RecommendMode(nil, 0); got.Mode != "" {
		t.Errorf("no measurements: %q, want no advice", got.Mode)
	}
}
