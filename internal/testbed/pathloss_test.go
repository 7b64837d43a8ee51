package testbed

import (
	"math"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// TestPathLoss: a packet crosses a chain's links one after another, so
// it gets through with the product of their chances; the path's loss is
// the mean of the two directions'.
func TestPathLoss(t *testing.T) {
	ten := emu.LinkConfig{Up: emu.DirectionConfig{Loss: emu.LossConfig{Model: emu.LossBernoulli, Rate: units.Ratio(0.1)}}}
	topo, err := Chain([]string{"publisher", "broker", "subscriber"}, []emu.LinkConfig{ten, ten})
	if err != nil {
		t.Fatal(err)
	}
	// Up: 0.9 · 0.9 = 0.81 through; down: all. Loss 1 − (0.81 + 1)/2.
	if got, want := topo.PathLoss(), 0.095; !(math.Abs(got-want) <= 1e-12) {
		t.Errorf("PathLoss = %v, want %v", got, want)
	}
	if got := ClientServer(emu.LinkConfig{}).PathLoss(); got != 0 {
		t.Errorf("a perfect link loses %v", got)
	}
}
