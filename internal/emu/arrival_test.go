package emu

import "testing"

// TestArrivalOfAFrameStampedDuringTheBatch: the receive ring is read a
// batch at a time after one clock read. Beside a CPU hog on each core, a
// frame came into the ring 93.7 µs after that read (the loop preempted
// mid-batch; seen with a debug trace on a 10 + 10 ms echo, 2026-11-28):
// placing its arrival at the read released it, and its echo, early. The
// arrival must be the frame's own stamp, the clock read afresh, and a
// frame in the ring before the read keeps its stamp as before.
//
// Link clock: the batch's read at 1 000 000 ns, CLOCK_REALTIME ahead of
// it by 5e9 ns; the clock read afresh says 1 100 000 ns.
func TestArrivalOfAFrameStampedDuringTheBatch(t *testing.T) {
	const offset = 5_000_000_000
	rereads := 0
	reread := func() readClock {
		rereads++
		return readClock{now: 1_100_000, offset: offset}
	}
	c := readClock{now: 1_000_000, offset: offset}
	cases := []struct {
		name         string
		ts           int64
		stamped      bool
		kernelTime   bool
		at, lag      int64
		rereadsAfter int
	}{
		// In the ring 100 µs before the read: its stamp, lag 100 µs.
		{"before the read", offset + 900_000, true, true, 900_000, 100_000, 0},
		// Stamped 94 µs after the batch's read: not 1 000 000 (94 µs
		// early), its stamp; the new read is 6 µs after it.
		{"during the batch", offset + 1_094_000, true, true, 1_094_000, 6_000, 1},
		// The next slot, 1 µs later: the fresh read covers it.
		{"after that, same batch", offset + 1_095_000, true, true, 1_095_000, 5_000, 1},
		// Past even the fresh read (the two clocks read a little apart):
		// never in the future.
		{"past the fresh read", offset + 1_200_000, true, true, 1_100_000, 0, 2},
		// Before the link started (a clock step): at its start.
		{"before the link", 10, true, true, 0, 1_100_000, 2},
		// Unstamped: when read.
		{"unstamped", 0, false, true, 1_100_000, 0, 2},
		// Timed by the read: the read, which is after the frame came.
		{"read time, stamped late", offset + 1_150_000, true, false, 1_100_000, 0, 3},
	}
	for _, tc := range cases {
		at, lag := c.arrival(tc.ts, tc.stamped, tc.kernelTime, reread)
		if at != tc.at || lag != tc.lag || rereads != tc.rereadsAfter {
			t.Errorf("%s: arrival %d lag %d after %d clock reads, want %d, %d, %d", tc.name, at, lag, rereads, tc.at, tc.lag, tc.rereadsAfter)
		}
	}
}
