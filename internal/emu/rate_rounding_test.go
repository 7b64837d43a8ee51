package emu

import (
	"math"
	"testing"

	"tlab/internal/units"
)

// TestRateLimiterKeepsFractionalNanoseconds: a 64-byte frame at 10 Gbit/s
// takes 64·8/10e9 s = 51.2 ns, which no integer nanosecond holds. The
// shaper keeps its busy-until time as a float so that the rounding of each
// release to whole nanoseconds never accumulates: 2000 back-to-back frames
// leave 1999·51.2 ns = 102348.8 ns after the first, whatever each release
// rounds to. Restarting each frame from the rounded release (51 ns a
// frame) would serve 10.04 Gbit/s, 0.4 % fast.
func TestRateLimiterKeepsFractionalNanoseconds(t *testing.T) {
	d := mustDirection(t, DirectionConfig{Rate: units.Bitrate(10e9), QueuePackets: 1 << 20}, 1)
	var first, last int64
	for i := range 2000 {
		v := admit(d, 0, 64) // all at once: each waits for the one before
		if i == 0 {
			first = v.Release
		}
		last = v.Release
	}
	if got, want := float64(last-first), 1999*51.2; !(math.Abs(got-want) <= 1) {
		t.Errorf("2000 frames of 64 bytes at 10 Gbit/s span %v ns after the first, want %v ± 1", got, want)
	}
}
