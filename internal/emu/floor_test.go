package emu

import (
	"testing"
	"time"

	"tlab/internal/units"
)

// A direction's least crossing time, by hand: 10 ms of delay with uniform
// jitter of half-width 3 ms can release a frame 7 ms after it came, never
// sooner; at 100 Mbit/s a 42-byte frame (emu.MinDataFrame) first takes
// 42·8/1e8 s = 3.36 µs on the wire (less the departure's 1 ns rounding:
// 3359 ns). Jitter wider than the delay leaves no propagation floor, only
// the wire's. Models whose draws reach below any bound, a reordering
// that skips the delay line, a trace, the 802.11 MAC and a timeline give
// none.
func TestTheLeastCrossingTimeByHand(t *testing.T) {
	ms := func(v float64) units.Duration { return units.Duration(v * float64(time.Millisecond)) }
	cases := []struct {
		name  string
		dir   DirectionConfig
		bytes int
		want  time.Duration
		ok    bool
	}{
		{"10 ms, uniform 3 ms", DirectionConfig{Delay: ms(10), Jitter: ms(3)}, MinDataFrame, 7 * time.Millisecond, true},
		{"10 ms, uniform named", DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterDist: DistUniform}, MinDataFrame, 7 * time.Millisecond, true},
		{"10 ms, correlated uniform", DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterCorrelation: 0.5}, MinDataFrame, 7 * time.Millisecond, true},
		{"10 ms, 100 Mbit/s", DirectionConfig{Delay: ms(10), Rate: 100e6}, MinDataFrame, 10*time.Millisecond + 3359*time.Nanosecond, true},
		{"2 ms, jitter 5 ms, 100 Mbit/s", DirectionConfig{Delay: ms(2), Jitter: ms(5), Rate: 100e6}, MinDataFrame, 3359 * time.Nanosecond, true},
		{"loss and a queue change nothing", DirectionConfig{Delay: ms(10), Loss: LossConfig{Model: LossBernoulli, Rate: 0.05}, QueuePackets: 10}, MinDataFrame, 10 * time.Millisecond, true},
		{"normal jitter", DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterDist: DistNormal}, MinDataFrame, 0, false},
		{"pareto jitter", DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterDist: DistPareto}, MinDataFrame, 0, false},
		{"lognormal jitter", DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterDist: DistLogNormal}, MinDataFrame, 0, false},
		{"reordering", DirectionConfig{Delay: ms(10), Reorder: 0.01}, MinDataFrame, 0, false},
		{"a trace", DirectionConfig{Delay: ms(10), Trace: "x.trace"}, MinDataFrame, 0, false},
		{"a timeline", DirectionConfig{Delay: ms(10), Timeline: Timeline{Steps: []TimelineStep{{}}}}, MinDataFrame, 0, false},
		{"802.11", DirectionConfig{Delay: ms(10), Rate: 20e6, WiFi: WiFiConfig{Retries: 3}}, MinDataFrame, 0, false},
	}
	for _, c := range cases {
		got, ok := c.dir.MinOneWay(c.bytes)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
