package emu

import (
	"testing"
	"time"

	"tlab/internal/units"
)

// BenchmarkDirectionAdmit measures the models' cost per packet on the
// virtual clock (offer, queue, transmit): the emulator's per-packet
// decision budget, for each queue discipline.
func BenchmarkDirectionAdmit(b *testing.B) {
	for _, q := range QdiscNames() {
		b.Run(q, func(b *testing.B) {
			cfg := DirectionConfig{
				Delay: units.Duration(10 * time.Millisecond), Jitter: units.Duration(time.Millisecond), JitterDist: DistNormal,
				Rate: 1e9, Loss: LossConfig{Model: LossGilbert, P: 0.01, R: 0.1, OneMinusH: 0.7, OneMinusK: 0.001},
				Queue: QueueConfig{Type: q},
			}
			d, err := NewDirection(cfg, int64(20*time.Millisecond), 1, "bench/up", nil)
			if err != nil {
				b.Fatal(err)
			}
			emit := func(int32, Verdict) {}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// Slightly faster than the link: a standing queue.
				now := int64(i) * 11900
				d.Offer(now, Frame{Size: 1500, Flow: uint32(i % 4), ECN: ECT0}, emit)
				d.Transmit(now, emit)
			}
		})
	}
}
