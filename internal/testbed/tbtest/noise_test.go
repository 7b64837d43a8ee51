package tbtest

import (
	"math"
	"testing"

	"tlab/internal/results"
)

func row(fields map[string]float64) results.Summary {
	var s results.Summary
	for k, v := range fields {
		s.Fields = append(s.Fields, results.Field{Name: k, Value: v})
	}
	return s
}

// TestNoiseSlackFollowsTheWorstRow: hand-computed from the definition.
func TestNoiseSlackFollowsTheWorstRow(t *testing.T) {
	quiet := row(map[string]float64{"host_wakeup_p99_us": 40, "emu_release_p99_us": 25, "host_steal_pct": 0})
	busy := row(map[string]float64{"host_wakeup_p99_us": 3000, "emu_release_p99_us": 8000, "host_steal_pct": 10})
	unmeasured := row(map[string]float64{"host_wakeup_p99_us": math.NaN(), "emu_release_p99_us": math.NaN(), "host_steal_pct": math.NaN()})
	for _, c := range []struct {
		name  string
		delay float64
		rows  []results.Summary
		want  float64
	}{
		{"quiet: twice the larger p99", 20, []results.Summary{quiet}, 2 * 0.040},
		{"busy: twice the emulator's 8 ms, and 10 % of 20 ms", 20, []results.Summary{quiet, busy}, 2*8 + 2},
		{"no measure adds nothing", 20, []results.Summary{unmeasured}, 0},
		{"no rows", 20, nil, 0},
	} {
		if got := NoiseSlackMs(c.delay, c.rows...); !(math.Abs(got-c.want) <= 1e-9) {
			t.Errorf("%s: %.3f ms, want %.3f", c.name, got, c.want)
		}
	}
}
