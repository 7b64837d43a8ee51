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
	if math.Abs(p.Mean()-12) > 1e-9 || math.Abs(p.Std()-math.Sqrt(14.0/3)) > 1e-9 || math.Abs(p.MeanStep()-7.0/3) > 1e-9 {
		t.Errorf("mean %v std %v step %v", p.Mean(), p.Std(), p.MeanStep())
	}
	before := p
	p.add(int64(20e6))
	w := p.Sub(before)
	if w.N != 1 || math.Abs(w.Mean()-20) > 1e-9 || math.Abs(w.MeanStep()-5) > 1e-9 {
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
	if got.N != 1000 || math.Abs(got.Mean()-10) > 0.1 || got.Std() > 1.1 || got.Std() < 0.3 {
		t.Errorf("n %d mean %.3f ms std %.3f ms; want 1000, 10, about 0.58 (uniform ±1 ms)", got.N, got.Mean(), got.Std())
	}
}
