package experiment

import (
	"errors"
	"math"
	"sync"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/testbed"
)

// fakeMeter hands out the counter snapshots it holds, one per Stats call,
// and counts resets.
type fakeMeter struct {
	snaps  []emu.EngineStats
	calls  int
	resets int
}

func (m *fakeMeter) Stats() (emu.EngineStats, error) {
	s := m.snaps[min(m.calls, len(m.snaps)-1)]
	m.calls++
	return s, nil
}
func (m *fakeMeter) ResetLateness() error { m.resets++; return nil }

type fakeProbe struct {
	stopped *int
	sample  hostnoise.Sample
}

func (p fakeProbe) Stop() hostnoise.Sample { *p.stopped++; return p.sample }

func link(name string, upTx, downTx uint64) emu.LinkStats {
	return emu.LinkStats{Name: name, Up: emu.DirectionStats{TxPackets: upTx, TxBytes: 100 * upTx}, Down: emu.DirectionStats{TxPackets: downTx, TxBytes: 100 * downTx}}
}

// TestCellLedgerAccountsForTheWindow: the ledger counts the links from the
// last window start, turns the measured link to the first role's view,
// keeps the first failure, passes records to the sink until it fails,
// and notes the instrument's figures; without a network or an emulator.
func TestCellLedgerAccountsForTheWindow(t *testing.T) {
	m := &fakeMeter{snaps: []emu.EngineStats{
		{Links: []emu.LinkStats{link("path", 5, 7)}},   // first window start
		{Links: []emu.LinkStats{link("path", 10, 20)}}, // the workload's own start
	}}
	stopped := 0
	probes := 0
	var sunk []int
	led := cellrun.NewCellLedger(m, func(r results.Record) error {
		sunk = append(sunk, r.Seq)
		if r.Seq == 2 {
			return errors.New("disk full")
		}
		return nil
	}, func() cellrun.NoiseProbe {
		probes++
		return fakeProbe{&stopped, hostnoise.Sample{StealPct: 3, Wakeups: 500, WindowS: 1}}
	}, 0)
	led.StartWindow()
	env := led.Env(nil, proto.DefaultSettings(), nil)
	env.StartWindow() // the workload marks its window: the counters restart here
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); env.Emit(results.Record{Seq: i, DelayMs: float64(i)}) }()
	}
	wg.Wait()
	env.Note("conns_opened", 2)
	env.Fail("broker: refused")
	env.Fail("publisher: a consequence")
	if n, _ := led.Progress(); n != 4 {
		t.Errorf("%d records so far", n)
	}
	if err := led.Err(); err == nil || err.Error() != "disk full" {
		t.Errorf("sink error %v", err)
	}
	if len(sunk) == 0 || sunk[len(sunk)-1] != 2 {
		t.Errorf("sink got %v: it should stop after its error", sunk)
	}
	if probes != 2 || stopped != 1 || m.resets != 2 {
		t.Errorf("probes started %d, stopped %d; resets %d", probes, stopped, m.resets)
	}
	host := led.StopProbe()
	end := emu.EngineStats{Links: []emu.LinkStats{link("path", 15, 50)}, Lateness: emu.LatencySummary{P99: 11, P999: 40, Max: 90}}
	res := led.Result(end, "path", false, []testbed.LiveRun{{ID: "x"}}, host)
	if got := res.Links["path"]; got.Up.TxPackets != 5 || got.Down.TxPackets != 30 {
		t.Errorf("link over the window: up %d down %d, want 5 and 30", got.Up.TxPackets, got.Down.TxPackets)
	}
	// The first role sits at the link's B end: its up is the link's down.
	if res.Window.Up.TxPackets != 30 || res.Window.Down.TxPackets != 5 {
		t.Errorf("measured window up %d down %d, want 30 and 5", res.Window.Up.TxPackets, res.Window.Down.TxPackets)
	}
	if res.Failed != "broker: refused" {
		t.Errorf("failure %q, want the first", res.Failed)
	}
	for k, v := range map[string]float64{"conns_opened": 2, "emu_release_p99_us": 11, "emu_release_p999_us": 40, "emu_release_max_us": 90, "overlapping_runs": 1, "host_steal_pct": 3} {
		if led.Facts[k] != v {
			t.Errorf("%s = %v, want %v", k, led.Facts[k], v)
		}
	}
}

// TestFailedProbeIsNotAQuietHost: a host-noise probe that saw nothing
// (no wake-ups: its child failed) leaves the cell's host figures unknown,
// never 0 %, 0 us.
func TestFailedProbeIsNotAQuietHost(t *testing.T) {
	stopped := 0
	led := cellrun.NewCellLedger(&fakeMeter{snaps: []emu.EngineStats{{}}}, nil, func() cellrun.NoiseProbe { return fakeProbe{&stopped, hostnoise.Sample{PressurePct: -1}} }, 0)
	led.StartWindow()
	led.Result(emu.EngineStats{}, "", true, nil, led.StopProbe())
	for _, k := range []string{"host_steal_pct", "host_wakeup_p99_us", "host_wakeup_max_us"} {
		if v := led.Facts[k]; !math.IsNaN(v) {
			t.Errorf("%s = %v after a probe that saw nothing, want NaN", k, v)
		}
	}
}
