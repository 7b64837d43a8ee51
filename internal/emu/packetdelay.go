package emu

import "math"

// PacketDelays summarises the one-way delay of every packet a direction
// delivered, from its arrival at the emulator to its release (queue,
// transmission, delay and jitter): what a passive probe on both ends of
// the link sees, since the hosts' interfaces meet the emulator within
// microseconds. The mean, spread and mean step between consecutive
// packets are exact; percentiles come from a histogram.
type PacketDelays struct {
	N        uint64  `json:"n"`
	SumMs    float64 `json:"sum_ms"`
	SumSqMs2 float64 `json:"sum_sq_ms2"`
	// SumStepMs adds |d(i) − d(i−1)| over Steps pairs of consecutive
	// packets, in release order (RFC 3550's D, a packet to the next).
	SumStepMs float64          `json:"sum_step_ms"`
	Steps     uint64           `json:"steps"`
	Hist      SojournHistogram `json:"hist"`

	lastMs  float64
	hasLast bool
}

// add counts one delivered packet's delay.
func (p *PacketDelays) add(ns int64) {
	ms := float64(ns) / 1e6
	p.N++
	p.SumMs += ms
	p.SumSqMs2 += ms * ms
	if p.hasLast {
		p.SumStepMs += math.Abs(ms - p.lastMs)
		p.Steps++
	}
	p.lastMs, p.hasLast = ms, true
	p.Hist.Add(ns)
}

// Sub is p less an earlier snapshot of the same counters: the packets
// delivered between the two.
func (p PacketDelays) Sub(o PacketDelays) PacketDelays {
	return PacketDelays{N: p.N - o.N, SumMs: p.SumMs - o.SumMs, SumSqMs2: p.SumSqMs2 - o.SumSqMs2,
		SumStepMs: p.SumStepMs - o.SumStepMs, Steps: p.Steps - o.Steps, Hist: p.Hist.Sub(o.Hist)}
}

// Mean is the mean delay in ms (NaN without packets).
func (p PacketDelays) Mean() float64 {
	if p.N == 0 {
		return math.NaN()
	}
	return p.SumMs / float64(p.N)
}

// Std is the delays' standard deviation (n−1) in ms.
func (p PacketDelays) Std() float64 {
	if p.N < 2 {
		return math.NaN()
	}
	n := float64(p.N)
	v := (p.SumSqMs2 - p.SumMs*p.SumMs/n) / (n - 1)
	return math.Sqrt(max(v, 0))
}

// MeanStep is the mean absolute difference between consecutive packets'
// delays in ms: their delay variation over the whole window.
func (p PacketDelays) MeanStep() float64 {
	if p.Steps == 0 {
		return math.NaN()
	}
	return p.SumStepMs / float64(p.Steps)
}
