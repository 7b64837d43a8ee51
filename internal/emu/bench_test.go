package emu

import (
	"testing"
	"time"

	"tlab/internal/units"
)

// BenchmarkDirectionAdmit measures the models' cost per packet on the
// virtual clock: the emulator's per-packet decision budget.
func BenchmarkDirectionAdmit(b *testing.B) {
	cfg := DirectionConfig{
		Delay: units.Duration(10 * time.Millisecond), Jitter: units.Duration(time.Millisecond), JitterDist: DistNormal,
		Rate: 1e9, Loss: LossConfig{Model: LossGilbert, P: 0.01, R: 0.1, OneMinusH: 0.7, OneMinusK: 0.001},
	}
	d, err := NewDirection(cfg, int64(20*time.Millisecond), 1, "bench/up", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Admit(int64(i)*12000, 1500)
	}
}
