package tbtest

import (
	"math"

	"tlab/internal/results"
)

// NoiseSlackMs is how far the host's own noise, as the rows measured it
// during their cells, can move a delay a test compares (a median of
// exchanges, in ms) beyond the bound it would hold on a quiet host. An
// exchange crosses the link twice, and at each end the thread that sends
// or receives, and the emulator that releases the packet, may wait for a
// CPU: so twice the larger of the host's wake-up p99 and the emulator's
// release p99, whichever row saw more; and a hypervisor that steals a
// share of the CPU stretches the delay by up to that share. A row without
// a measure (a failed probe, a real path with no emulator) adds nothing
// from it: noise that was not measured does not widen a bound. On a quiet
// host (p99s of tens of µs, no steal) this is a fraction of a millisecond.
func NoiseSlackMs(delayMs float64, rows ...results.Summary) float64 {
	var waitUs, stealPct float64
	for _, r := range rows {
		for _, k := range []string{"host_wakeup_p99_us", "emu_release_p99_us"} {
			if v := r.Float(k); v > waitUs { // NaN compares false
				waitUs = v
			}
		}
		if v := r.Float("host_steal_pct"); v > stealPct {
			stealPct = v
		}
	}
	return 2*waitUs/1000 + math.Abs(delayMs)*stealPct/100
}
