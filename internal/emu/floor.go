package emu

import (
	"math"
	"time"
)

// MinDataFrame is the least Ethernet frame, in bytes as a direction's rate
// counts them (header, no preamble, no FCS), that carries a byte of any
// transport's payload: an Ethernet header (14) and an IPv4 header (20,
// IPv6's is 40) and a UDP header (8, TCP's is 20). A message that crosses
// a rate-limited direction is whole only once a frame of at least this
// size has been transmitted.
const MinDataFrame = 14 + 20 + 8

// MinOneWay is the least time a frame of at least frameBytes bytes takes
// to cross this direction: from when the emulator takes it in to when it
// writes it out. ok is false where the configuration lets a frame through
// sooner than anything this can prove, or where the bound depends on what
// happens while the link runs; a caller then has no floor.
//
// Proof, from Direction.Offer, Transmit and release (direction.go) and
// the engine (engine_linux.go):
//
//   - A frame offered at arrival a (the link clock; a kernel receive
//     stamp converted through an offset whose monotonic reading is taken
//     after the wall clock's, so that the converted arrival is never
//     before the true one) is, without a rate, released at
//     max(a + delay + j, a) where j is its jitter draw; with a constant
//     rate it starts transmission at s ≥ a and departs at
//     int64(s + size·nsPerByte + 0.5) ≥ a + size·nsPerByte − 0.5 ns
//     (constantRate.Departure), then is released at
//     max(depart + delay + j, depart).
//   - Holding it behind an earlier frame (lastRelease, the queue, the
//     transmitter being busy) only delays it; loss, outages, the queue's
//     drops and corruption drop a frame, never bring one forward;
//     duplication releases the copy at the same time.
//   - Uniform jitter draws j in [−J, J] (jitterDist.Sample: 2u − 1 with u
//     in [0, 1), or, with a correlation or a coherence time, 1 − 2·Q(z),
//     also in [−1, 1]), scaled by the half-width J; int64(j) truncates
//     toward zero, so it is ≥ −J. Hence delay + j ≥ delay − J.
//   - The engine writes a frame out only once its release is due
//     (releaseQueue.popDue(now) pops release ≤ now): its lateness,
//     sendAt − release, is ≥ 0; it never writes one early.
//
// So the frame leaves at least max(delay − J, 0) + serialisation after it
// arrived, serialisation being frameBytes·8/rate less a nanosecond (the
// departure's rounding) with a rate and 0 without.
//
// What breaks the proof, and so gives no floor: a reordered frame skips
// the delay line (Reorder > 0, netem's rule); a jitter distribution
// without a lower end (normal, pareto, paretonormal, lognormal: their
// draws reach below any −J, clipped only at the departure); a rate trace
// (a delivery opportunity may come at once); the 802.11 model (its shared
// air is another server); and a timeline, which changes the delay and the
// jitter while the link runs.
func (d DirectionConfig) MinOneWay(frameBytes int) (time.Duration, bool) {
	switch {
	case d.Reorder > 0, d.Trace != "", d.WiFi.Enabled(), !d.Timeline.Empty() || d.Timeline.File != "":
		return 0, false
	case d.Jitter > 0 && d.JitterDist != "" && d.JitterDist != DistUniform:
		return 0, false
	case d.Delay < 0 || d.Jitter < 0:
		return 0, false
	}
	prop := max(d.Delay.D()-d.Jitter.D(), 0)
	if d.Rate <= 0 || frameBytes <= 0 {
		return prop, true
	}
	serialNs := math.Floor(float64(frameBytes)*8e9/d.Rate.BitsPerSecond()) - 1
	return prop + time.Duration(max(serialNs, 0)), true
}
