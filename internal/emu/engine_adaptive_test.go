package emu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"tlab/internal/units"
)

// TestLoopWaitSpinsOnlyWhenWorkIsNear checks the loop's choice between
// spinning and blocking against cases computed by hand from the rule in
// adaptive.go, with a spin (wake-up latency) of 50 µs and the round at
// now = 1 ms: spin while work is due within 50 µs or a frame moved less
// than 50 µs ago (adaptive only), block until due - 50 µs otherwise, and
// until an event when nothing waits.
func TestLoopWaitSpinsOnlyWhenWorkIsNear(t *testing.T) {
	const (
		spin  = 50_000
		now   = 1_000_000
		never = int64(math.MaxInt64)
		long  = int64(math.MinInt64 / 2) // no frame moved yet
	)
	for _, c := range []struct {
		name      string
		mode      string
		due       int64
		lastMoved int64
		linger    bool
		want      int64
	}{
		{"busy idle", ModeBusy, never, long, false, waitPoll},
		{"busy far release", ModeBusy, now + 10_000_000, long, true, waitPoll},

		{"sleep idle", ModeSleep, never, long, false, waitForever},
		{"sleep release in 40 µs", ModeSleep, now + 40_000, long, false, waitPoll},
		{"sleep release in exactly 50 µs", ModeSleep, now + 50_000, long, false, waitPoll},
		{"sleep release in 300 µs: block 250", ModeSleep, now + 300_000, long, false, 250_000},
		{"sleep never lingers", ModeSleep, now + 300_000, now - 10_000, true, 250_000},
		{"sleep overdue", ModeSleep, now - 5_000, long, false, waitPoll},

		{"adaptive idle", ModeAdaptive, never, long, true, waitForever},
		{"adaptive idle, a frame moved 10 µs ago", ModeAdaptive, never, now - 10_000, true, waitPoll},
		{"adaptive idle, a frame moved 10 µs ago, no linger", ModeAdaptive, never, now - 10_000, false, waitForever},
		{"adaptive idle, a frame moved 49.999 µs ago", ModeAdaptive, never, now - 49_999, true, waitPoll},
		{"adaptive idle, a frame moved 50 µs ago", ModeAdaptive, never, now - 50_000, true, waitForever},
		{"adaptive release in 40 µs", ModeAdaptive, now + 40_000, long, false, waitPoll},
		{"adaptive release in exactly 50 µs", ModeAdaptive, now + 50_000, long, false, waitPoll},
		{"adaptive release in 50.001 µs: block 1 ns", ModeAdaptive, now + 50_001, long, false, 1},
		{"adaptive release in 300 µs: block 250", ModeAdaptive, now + 300_000, long, true, 250_000},
		{"adaptive release in 300 µs, a frame moved 20 µs ago", ModeAdaptive, now + 300_000, now - 20_000, true, waitPoll},
		{"adaptive release in 300 µs, a frame moved 20 µs ago, no linger", ModeAdaptive, now + 300_000, now - 20_000, false, 250_000},
		{"adaptive release in 10 ms, a frame moved 1 ms ago", ModeAdaptive, now + 10_000_000, now - 1_000_000, true, 9_950_000},
		{"adaptive overdue", ModeAdaptive, now - 5_000, long, false, waitPoll},
	} {
		if got := loopWait(c.mode, now, c.due, c.lastMoved, spin, c.linger); got != c.want {
			t.Errorf("%s: wait %d, want %d", c.name, got, c.want)
		}
	}
}

// TestLingerOnlyWhereAFrameMayBeDueAtOnce: the adaptive loop keeps
// spinning after a frame only on a link whose delay less jitter is under
// the longest spin (250 µs): there a frame may be due before a wake-up
// ends.
func TestLingerOnlyWhereAFrameMayBeDueAtOnce(t *testing.T) {
	us := func(v int) units.Duration { return units.Duration(time.Duration(v) * time.Microsecond) }
	for _, c := range []struct {
		delay, jitter units.Duration
		want          bool
	}{
		{0, 0, true},
		{us(200), 0, true},
		{us(250), 0, false},
		{us(300), us(100), true},
		{us(10000), 0, false},
	} {
		if got := releasesSoonerThanSpin(DirectionConfig{Delay: c.delay, Jitter: c.jitter}); got != c.want {
			t.Errorf("delay %v, jitter %v: linger %v, want %v", c.delay, c.jitter, got, c.want)
		}
	}
}

// TestWakeEstimateIsTheP99OfItsWindow: the spin is the nearest-rank p99 of
// the last 256 timed wake-ups, ceil(0.99 × 256) = the 254th smallest, which
// is the third largest; it changes only when a window is full, and stays
// within [5 µs, 250 µs].
func TestWakeEstimateIsTheP99OfItsWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	us := func(v int) int64 { return int64(v) * 1000 }

	// 0.5, 1, ..., 128 µs in any order: the 254th smallest is 127 µs.
	w := newWakeEstimate(nil)
	if w.spinNs != minSpinNs {
		t.Fatalf("no samples: spin %d, want the floor %d", w.spinNs, minSpinNs)
	}
	for _, i := range rng.Perm(wakeWindow) {
		w.add(int64(i+1) * 500)
	}
	if w.spinNs != 127_000 {
		t.Errorf("0.5..128 µs: spin %d ns, want 127 µs", w.spinNs)
	}

	// Two stalls of 5 ms among 10 µs wake-ups are the p99.5 and above:
	// the p99 (third largest) is 10 µs. A third stall makes it 5 ms,
	// bounded to 250 µs.
	for stalls, want := range map[int]int64{2: us(10), 3: maxSpinNs} {
		w := newWakeEstimate(nil)
		for i := range wakeWindow {
			late := us(10)
			if i < stalls {
				late = us(5000)
			}
			w.add(late)
			if i < wakeWindow-1 && w.spinNs != minSpinNs {
				t.Fatalf("spin changed to %d after %d samples, before the window filled", w.spinNs, i+1)
			}
		}
		if w.spinNs != want {
			t.Errorf("%d stalls of 5 ms among 10 µs: spin %d ns, want %d", stalls, w.spinNs, want)
		}
	}

	// Wake-ups earlier than asked (negative) or faster than a round of
	// the loop: the floor.
	w = newWakeEstimate([]int64{-3000, 100, 2000})
	if w.spinNs != minSpinNs {
		t.Errorf("sub-microsecond start: spin %d, want the floor %d", w.spinNs, minSpinNs)
	}

	// The start-up measurement: 150 samples, ceil(0.99 × 150) = 149th
	// smallest, the second largest: 30 µs here (50 µs above it).
	start := make([]int64, 150)
	for i := range start {
		start[i] = us(7)
	}
	start[3], start[100] = us(30), us(50)
	if got := newWakeEstimate(start).spinNs; got != us(30) {
		t.Errorf("start-up p99: %d ns, want 30 µs", got)
	}
	if start[3] != us(30) || start[100] != us(50) {
		t.Error("newWakeEstimate reordered its caller's samples")
	}
}

// TestLateWakeUpDoesNotDelayLaterFrames: releases are due on the link's
// clock from each frame's arrival and the models, never from when the
// loop ran. Three 1000-byte frames arrive together at t = 0 on an
// 8 Mbit/s link (1 ms each on the wire) with 10 ms of delay: by hand,
// they depart at 1, 2 and 3 ms and are due at 11, 12 and 13 ms. The loop
// then wakes 4.5 ms late for the second transmission (at 5.5 ms instead of
// 1 ms): the second and third are still due at 12 and 13 ms, not at
// 5.5 + 1 + 10 = 16.5 and 17.5 ms, and a fourth frame arriving at 6 ms
// (the wire free since 3 ms) is due at 6 + 1 + 10 = 17 ms.
func TestLateWakeUpDoesNotDelayLaterFrames(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * float64(time.Millisecond)) }
	cfg := DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Rate: 8e6}
	d, err := NewDirection(cfg, ms(20), 1, "late/up", nil)
	if err != nil {
		t.Fatal(err)
	}
	var releases []int64
	emit := func(_ int32, v Verdict) {
		if v.Drop != Delivered {
			t.Fatalf("a frame was dropped: %v", v.Drop)
		}
		releases = append(releases, v.Release)
	}
	for i := range 3 {
		d.Offer(0, Frame{Size: 1000, Ref: int32(i)}, emit)
	}
	if got := d.NextTransmit(); got != ms(1) {
		t.Fatalf("next transmission at %d, want 1 ms", got)
	}
	d.Transmit(ms(5.5), emit) // the late wake-up
	d.Offer(ms(6), Frame{Size: 1000, Ref: 3}, emit)
	want := []int64{ms(11), ms(12), ms(13), ms(17)}
	if len(releases) != len(want) {
		t.Fatalf("releases %v, want %v", releases, want)
	}
	for i := range want {
		if releases[i] != want[i] {
			t.Errorf("frame %d due at %.3f ms, want %.3f ms", i, float64(releases[i])/1e6, float64(want[i])/1e6)
		}
	}
}
