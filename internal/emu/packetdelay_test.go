package emu

import (
	"math"
	"testing"
	"time"

	"tlab/internal/units"
)

// TestPacketDelaysByDefinition: delays of 10, 12, 11 and 15 ms have a
// mean of 12 ms, a standard deviation (n−1) of √(14/3) ms and a mean
// step between consecutive packets of (2 + 1 + 4)/3 ms; a window is the
// difference of two snapshots.
func TestPacketDelaysByDefinition(t *testing.T) {
	var p PacketDelays
	for _, ms := range []float64{10, 12, 11, 15} {
		p.add(int64(ms * 1e6))
	}
	if !(math.Abs(p.Mean()-12) > 1e-9 || math.Abs(p.Std()-math.Sqrt(14.0/3)) > 1e-9 || math.Abs(p.MeanStep()-7.0/3) <= 1e-9) {
		t.Errorf("mean %v std %v step %v", p.Mean(), p.Std(), p.MeanStep())
	}
	before := p
	p.add(int64(20e6))
	w := p.Sub(before)
	if w.N != 1 || !(math.Abs(w.Mean()-20) > 1e-9 || math.Abs(w.MeanStep()-5) <= 1e-9) {
		t.Errorf("window: n %d mean %v step %v, want 1, 20, 5", w.N, w.Mean(), w.MeanStep())
	}
	if m := w.Hist.Quantile(0.5); math.Abs(m-20)/20 > 0.125 {
		t.Errorf("window median %v, want 20 within the histogram's 12.5 %%", m)
	}
}

// TestDirectionCountsEveryPacketsDelay: a direction with 10 ms of delay
// and 2 ms of uniform jitter delivers every packet between 9 and 11 ms
// after its arrival (no rate: no queue), and counts each.
func TestDirectionCountsEveryPacketsDelay(t *testing.T) {
	d := mustDirection(t, DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Jitter: units.Duration(time.Millisecond), JitterDist: "uniform", JitterReorders: true}, 3)
	for i := range 1000 {
		admit(d, int64(i)*int64(5*time.Millisecond), 200)
	}
	got := d.Stats.Delivered
	if got.N != 1000 || !(math.Abs(got.Mean()-10) <= 0.1) || got.Std() > 1.1 || got.Std() < 0.3 {
		t.Errorf("n %d mean %.3f ms std %.3f ms; want 1000, 10, about 0.58 (uniform ±1 ms)", got.N, got.Mean(), got.Std())
	}
}

// TestSentDelayStartsAfterTheQueue: a 1 Mbit/s direction with 10 ms of
// delay is sent a burst of ten 1250-byte packets at once. Each takes
// 10 ms to transmit, so the k-th waits 10·k ms in the queue: the delay
// from arrival is 10·k + 10 + 10 ms, while a probe tapping after the
// sender's queue (as Linux's packet capture does, after the qdisc) sees
// 20 ms for every packet.
func TestSentDelayStartsAfterTheQueue(t *testing.T) {
	d := mustDirection(t, DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Rate: units.Bitrate(1e6), QueuePackets: 100}, 1)
	for range 10 {
		admit(d, 0, 1250)
	}
	sent, all := d.Stats.Sent, d.Stats.Delivered
	if sent.N != 10 || !(math.Abs(sent.Mean()-20) > 0.01 || sent.Std() <= 0.01) {
		t.Errorf("after the queue: n %d mean %.3f ms std %.3f ms, want 10 packets at 20 ms", sent.N, sent.Mean(), sent.Std())
	}
	if all.N != 10 || !(math.Abs(all.Mean()-65) <= 0.01) {
		t.Errorf("from arrival: n %d mean %.3f ms, want 10 packets averaging 20 + 45 ms of queue", all.N, all.Mean())
	}
}

// TestCoherentJitterFollowsTransmissionTimes: a burst of 100 packets that
// arrives at once leaves a 10 Mbit/s queue over 120 ms; with jitter
// coherent over 5 ms the packets must not share one draw (the latent
// moves between their transmissions), and the spread of their delays
// after the queue is the configured one.
func TestCoherentJitterFollowsTransmissionTimes(t *testing.T) {
	d := mustDirection(t, DirectionConfig{Delay: units.Duration(50 * time.Millisecond), Rate: units.Bitrate(10e6), QueuePackets: 1000,
		Jitter: units.Duration(2 * time.Millisecond), JitterDist: DistNormal, JitterCoherence: units.Duration(5 * time.Millisecond), JitterReorders: true}, 1)
	for range 100 {
		admit(d, 0, 1500)
	}
	if sd := d.Stats.Sent.Std(); sd < 1 || sd > 3 {
		t.Errorf("delays after the queue: sd %.3f ms across a 120 ms burst, want about the configured 2 ms", sd)
	}
}
