package cellrun

import (
	"testing"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
)

// cpuMeter hands out one engine snapshot per Stats call.
type cpuMeter struct {
	snaps []emu.EngineStats
	calls int
}

func (m *cpuMeter) Stats() (emu.EngineStats, error) {
	s := m.snaps[min(m.calls, len(m.snaps)-1)]
	m.calls++
	return s, nil
}
func (m *cpuMeter) ResetLateness() error { return nil }

type quietProbe struct{}

func (quietProbe) Stop() hostnoise.Sample { return hostnoise.Sample{Wakeups: 1, WindowS: 1} }

// TestCellRowHasTheEmulatorsCPUOverItsWindow: a cell's emu_cpu_s is the
// CPU time the engine used between the window's start and its end, not
// since the engine started: the cost of the traffic measured, beside its
// release error. The engine reports its CPU as getrusage's user plus
// system time in ns (LoopStats.CPUNs); by hand: 1.25 s at the window's
// start (the testbed's set-up, a warm-up), 4.00 s at its end, so 2.75 s
// in the window; 11 µs of release error p99 stays beside it.
func TestCellRowHasTheEmulatorsCPUOverItsWindow(t *testing.T) {
	m := &cpuMeter{snaps: []emu.EngineStats{{Loop: emu.LoopStats{CPUNs: 1_250_000_000}, ClockNs: 2e9}}}
	led := NewCellLedger(m, nil, func() NoiseProbe { return quietProbe{} }, 0)
	led.StartWindow()
	end := emu.EngineStats{Loop: emu.LoopStats{CPUNs: 4_000_000_000}, ClockNs: 12e9, Lateness: emu.LatencySummary{P99: 11}}
	led.Result(end, "path", true, nil, led.StopProbe())
	if got := led.Facts["emu_cpu_s"]; got != 2.75 {
		t.Errorf("emu_cpu_s = %v, want 2.75 (4.00 s at the end less 1.25 s at the window's start)", got)
	}
	if got := led.Facts["emu_release_p99_us"]; got != 11 {
		t.Errorf("emu_release_p99_us = %v beside it, want 11", got)
	}
}
