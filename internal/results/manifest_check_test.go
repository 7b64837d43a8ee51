package results

import "testing"

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
