package emu

// readClock is the link clock at a read, with the offset of the kernel's
// clock (CLOCK_REALTIME, its receive timestamps) from it.
type readClock struct {
	now, offset int64
}

// arrival is a frame's arrival on the link clock: its kernel timestamp
// tsNs (CLOCK_REALTIME) when it has one and the engine times by the
// kernel (kernelTime), else when it was read; lag is the timestamp's
// distance from the read.
//
// A stamp is never placed after the read, nor before the link started
// (a timestamp from before a clock step). The read is c.now only for
// frames that were in the ring when c was read: the receive ring is read
// a batch at a time after one clock read, and a frame the kernel stamps
// later than that read came in while the batch was being read (the loop
// preempted between slots, or a deferred read of many). Clamping its
// stamp to c.now would put its arrival before it came, and release it
// early by as much; so c is read afresh (reread) for such a frame and
// the frames after it in the batch.
func (c *readClock) arrival(tsNs int64, stamped, kernelTime bool, reread func() readClock) (at, lag int64) {
	if !stamped {
		return c.now, 0
	}
	at = max(tsNs-c.offset, 0)
	if at > c.now {
		*c = reread()
		at = max(tsNs-c.offset, 0)
	}
	at = min(at, c.now)
	lag = c.now - at
	if kernelTime {
		return at, lag
	}
	return c.now, lag
}
