package calibrate

import (
	"testing"

	"tlab/internal/emu"
)

// TestRecommendMode checks the decision rule against cases worked by hand
// from RecommendMode's comment, with the targets p99 100 µs and p50 20 µs:
// of the modes whose release error p99 is at most 100 µs, the cheapest in
// CPU; when none is, of those whose p50 is at most 20 µs (or, when none
// is, within 20 µs of the best p50), the cheapest; ties to adaptive, then
// sleep, then busy.
func TestRecommendMode(t *testing.T) {
	m := func(mode string, p99, cpu float64) ModeMeasurement {
		return ModeMeasurement{Mode: mode, ReleaseP99Us: p99, CPUPct: cpu}
	}
	// loaded is a measurement on a host whose tail is milliseconds.
	loaded := func(mode string, p50, p99, cpu float64) ModeMeasurement {
		return ModeMeasurement{Mode: mode, ReleaseP50Us: p50, ReleaseP99Us: p99, CPUPct: cpu}
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
		// None meets the p99 target (the lowest p99, busy's, does not
		// count); at the median adaptive (0.5) and sleep (1.5) meet
		// 20 µs, busy (70.5) does not; sleep's 9.7 % < 15.0 %. (This
		// machine's quick calibration under a load of 25.)
		{"loaded host, medians decide", []ModeMeasurement{loaded(a, 0.5, 39458, 15.0), loaded(s, 1.5, 38777, 9.7), loaded(b, 70.5, 32740, 47.1)}, s},
		// None meets either target; the best p50 is busy's 250, within
		// 20 µs of it (≤ 270): busy and adaptive (260); adaptive's 12 %.
		{"loaded host, adaptive within 20 µs of the best median", []ModeMeasurement{loaded(a, 260, 5000, 12), loaded(s, 900, 9000, 8), loaded(b, 250, 5100, 60)}, a},
		// The same with adaptive at 271 (> 270): only busy.
		{"loaded host, adaptive's median too far", []ModeMeasurement{loaded(a, 271, 5000, 12), loaded(s, 900, 9000, 8), loaded(b, 250, 5100, 60)}, b},
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
