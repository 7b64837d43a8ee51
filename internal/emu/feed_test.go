package emu

import "math"

// admit offers one frame and returns its verdict at once, starting its
// transmission as soon as the transmitter is free even if that is later
// than now. For a first-in-first-out discipline that is the verdict the
// engine reaches (a packet's fate depends only on those before it); tests
// of disciplines that reorder use feed.
func admit(d *Direction, now int64, size int) Verdict {
	var got Verdict
	emit := func(_ int32, v Verdict) { got = v }
	d.Offer(now, Frame{Size: size}, emit)
	d.Transmit(math.MaxInt64, emit)
	return got
}

// arrival is one frame offered to a direction in a simulation.
type arrival struct {
	at   int64
	size int
	flow uint32
	ecn  uint8
}

// feed offers every arrival in time order, as the engine does (each
// transmission starting when the transmitter is free, never before an
// arrival at that time has been seen), and returns each frame's verdict.
func feed(d *Direction, arrivals []arrival) []Verdict {
	out := make([]Verdict, len(arrivals))
	emit := func(ref int32, v Verdict) { out[ref] = v }
	for i, a := range arrivals {
		d.Offer(a.at, Frame{Size: a.size, Flow: a.flow, ECN: a.ecn, Ref: int32(i)}, emit)
	}
	d.Transmit(math.MaxInt64, emit)
	return out
}
