package results

import (
	"math"
	"strings"
	"testing"
)

// A check on a difference reads with its interval; any other with its
// value alone.
func TestCheckValueText(t *testing.T) {
	for _, c := range []struct {
		check Check
		want  string
	}{
		{Check{Value: -5.5, Interval: []float64{-10, 1}}, "-5.5 [-10, 1]"},
		{Check{Value: 31}, "31"},
		{Check{Value: 2, Interval: []float64{1}}, "2"}, // not an interval
	} {
		if got := c.check.ValueText(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.check, got, c.want)
		}
	}
}

// TestClockDriftIsFlaggedBeyondItsUncertainty: offsets of +3.0 ± 0.4 ms
// at the start and +3.5 ± 0.3 ms at the end may be one offset (0.5 ≤
// 0.7); +4.2 ± 0.3 cannot (1.2 > 0.7), and the warning says by how much.
// Without an end check nothing can be told.
func TestClockDriftIsFlaggedBeyondItsUncertainty(t *testing.T) {
	start := PathCheck{Phase: "start", OffsetMs: 3.0, UncertaintyMs: 0.4}
	r := &Remote{Checks: []PathCheck{start, {Phase: "end", OffsetMs: 3.5, UncertaintyMs: 0.3}}}
	if d, a, moved, ok := r.ClockDrift(); !ok || moved || !(math.Abs(d-0.5) <= 1e-9) || !(math.Abs(a-0.7) <= 1e-9) || r.ClockDriftWarning() != "" {
		t.Errorf("0.5 ms within 0.7: drift %v allowed %v moved %v ok %v", d, a, moved, ok)
	}
	r.Checks[1].OffsetMs = 4.2
	if _, _, moved, _ := r.ClockDrift(); !moved || !strings.Contains(r.ClockDriftWarning(), "+1.20 ms") {
		t.Errorf("1.2 ms beyond 0.7: moved %v, warning %q", moved, r.ClockDriftWarning())
	}
	r.Checks[1].OffsetMs = 1.8 // backwards counts too
	if _, _, moved, _ := r.ClockDrift(); !moved {
		t.Error("a drift of -1.2 ms was not flagged")
	}
	if _, _, _, ok := (&Remote{Checks: []PathCheck{start}}).ClockDrift(); ok {
		t.Error("a run without an end check has no drift")
	}
}
