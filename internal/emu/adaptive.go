package emu

import (
	"math"
	"slices"
)

// Spinning in ModeAdaptive. A loop that blocks in the kernel until a frame
// is due wakes late, by the host's wake-up latency; a loop that polls
// wakes on time but holds a CPU. The adaptive loop polls only while work
// is due within one wake-up latency L of this host, measured, and blocks
// otherwise:
//   - until the next release (or transmission) is due minus L, so that the
//     wake-up's own lateness is spent spinning, not late;
//   - on links that may release a frame sooner than L after it arrived
//     (a delay below maxSpinNs), also for L after the last round that
//     moved a frame, so that a burst's next frame, or a reply to what was
//     just released, is read without a wake-up: there a read's lag is a
//     release error. Spinning for as long as a wake-up costs before
//     blocking is the spin-then-block rule of Karlin, Li, Manasse and
//     Owicki (SOSP 1991). On longer links a frame is timed by the kernel's
//     receive timestamp, so reading it a wake-up late costs nothing.
//
// Releases are due on the link's clock from each frame's arrival and the
// models (Direction), never from when the loop woke: a late wake-up delays
// the frames it finds, not every frame behind them.

// Wait timeouts of the loop's epoll_pwait2.
const (
	// waitPoll polls: the loop spins.
	waitPoll int64 = 0
	// waitForever blocks until a frame or a request arrives.
	waitForever int64 = -1
)

// loopWait is the timeout of the loop's wait after a round at now, in
// mode: waitPoll to spin, waitForever to block until an event, or a
// positive number of nanoseconds to block at most. due is when the next
// frame is to be released or transmitted (math.MaxInt64: nothing waits),
// spinNs how long before due the loop spins (ModeSleep's configured spin,
// ModeAdaptive's measured wake-up latency). lastMoved is when a round last
// moved a frame; with linger, the adaptive loop spins for spinNs after it.
func loopWait(mode string, now, due, lastMoved, spinNs int64, linger bool) int64 {
	switch mode {
	case ModeSleep, ModeAdaptive:
		switch {
		case due != math.MaxInt64 && due-now <= spinNs:
			return waitPoll
		case mode == ModeAdaptive && linger && now-lastMoved < spinNs:
			return waitPoll
		case due == math.MaxInt64:
			return waitForever
		}
		return due - now - spinNs
	}
	return waitPoll // ModeBusy
}

// Bounds of the adaptive spin. Below minSpinNs a round of the loop itself
// (reading, the models, a sendmmsg: a few microseconds) is the error.
// maxSpinNs is the longest wake-up that spinning can save: a 2-vCPU VM of
// the kind tlab is developed on wakes from idle in 50-60 µs; a later
// wake-up is the thread waiting for its CPU behind another one (the host
// preempting the VM, another thread's slice), which a spinning thread
// meets as well, and sooner: it uses up its share of the CPU. Measured
// on a loaded host (docs/methodology.md), a spin of a millisecond made the
// release error's median 260 µs where the sleeping loop's was 0.5 µs.
const (
	minSpinNs = 5_000
	maxSpinNs = 250_000
)

// releasesSoonerThanSpin says whether a direction with this configuration may
// release a frame sooner after its arrival than the longest adaptive spin:
// its delay, less its jitter, under maxSpinNs. On such a link the adaptive
// loop keeps spinning after it moved a frame (loopWait's linger).
func releasesSoonerThanSpin(c DirectionConfig) bool {
	return c.Delay.D().Nanoseconds()-c.Jitter.D().Nanoseconds() < maxSpinNs
}

// wakeWindow is how many timed wake-ups the adaptive loop gathers before
// it takes their p99 as its new spin.
const wakeWindow = 256

// wakeEstimate is the adaptive loop's wake-up latency: the p99 of how late
// its timed waits returned, over the last wakeWindow of them, bounded to
// [minSpinNs, maxSpinNs]. It starts from a measurement taken when the
// engine starts (measureWakeLatency) and follows the host as the loop
// sleeps.
type wakeEstimate struct {
	window [wakeWindow]int64
	n      int
	spinNs int64
}

// newWakeEstimate starts an estimate from lateness samples (ns).
func newWakeEstimate(samples []int64) *wakeEstimate {
	w := &wakeEstimate{spinNs: minSpinNs}
	if len(samples) > 0 {
		w.spinNs = boundSpin(p99(slices.Clone(samples)))
	}
	return w
}

// add records how late a timed wait returned; a full window becomes the
// new spin.
func (w *wakeEstimate) add(lateNs int64) {
	w.window[w.n] = max(lateNs, 0)
	w.n++
	if w.n == wakeWindow {
		w.spinNs = boundSpin(p99(w.window[:]))
		w.n = 0
	}
}

// p99 is the 99th percentile of s by the nearest-rank method: the
// ceil(0.99 n)-th smallest. It sorts s.
func p99(s []int64) int64 {
	slices.Sort(s)
	rank := (99*len(s) + 99) / 100 // ceil(0.99 n)
	return s[rank-1]
}

func boundSpin(ns int64) int64 { return min(max(ns, minSpinNs), maxSpinNs) }

// Deferred reads. On a link whose frames are timed by the kernel's
// receive timestamp, a frame read late is released on time, as long as it
// is read before it is due. A frame that arrives after the loop last found
// the receive rings empty is due no sooner than that moment plus the
// shortest hold of any direction (readHoldNs). So while frames wait in the
// delay line, the adaptive loop need not wake for each arrival: it blocks
// on its control pipe alone until the next release, or that bound, less
// its wake-up latency, and then reads every frame that came meanwhile in
// one pass. One wake-up a release instead of two a frame.

// minReadHoldNs is the shortest hold for which the loop defers reads:
// below it, the deferral would save less than the wake-up it costs.
const minReadHoldNs = 2 * maxSpinNs

// readHoldNs is the least time a frame arriving at this direction stays
// in the emulator, when the direction guarantees one its models cannot
// shorten: its delay on a link without a rate limit (no queue whose
// backlog depends on when the frame was read), without jitter and without
// reordering (either may release a frame before its delay). Zero
// otherwise: the frame must be read as it arrives.
func readHoldNs(d *Direction) int64 {
	c := d.cfg
	// A timeline (written, or made by a live change) may shorten the
	// delay or add jitter at any step: a frame read a hold late could
	// then be due before it is read.
	if d.shaper != nil || c.Jitter != 0 || c.Reorder != 0 || d.timeline != nil {
		return 0
	}
	return d.delayNs
}

// readDeadline is when the loop must next read its receive rings: lastRead
// (when it last found them empty) plus hold, or math.MaxInt64 when nothing
// waits in the delay line (the loop then blocks until a frame arrives) and
// when hold is too short to defer (0: read every frame as it arrives, at
// lastRead already past).
func readDeadline(lastRead, hold int64, waiting bool) int64 {
	switch {
	case hold < minReadHoldNs:
		return math.MinInt64
	case !waiting:
		return math.MaxInt64
	}
	return lastRead + hold
}
