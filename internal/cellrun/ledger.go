package cellrun

import (
	"errors"
	"math"
	"sync"
	"time"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// meter is what a cell reads of its emulator: the engine's counters, and
// the reset of its release statistics when the measured window starts.
// *emu.Emulator implements it; tests give a fake.
type Meter interface {
	Stats() (emu.EngineStats, error)
	ResetLateness() error
}

// noiseProbe measures the host's own noise over the window.
type NoiseProbe interface{ Stop() hostnoise.Sample }

// cellLedger keeps what a cell's workload reports through its Env: the
// records (passed on to the sink as they come), the facts it notes, the
// failure it marks, and the counters when its window started. It is safe
// for concurrent use, as Env's hooks must be.
type cellLedger struct {
	meter    Meter
	sink     func(results.Record) error
	newProbe func() NoiseProbe

	mu        sync.Mutex
	records   []results.Record
	lastDelay float64
	sinkErr   error
	Facts     map[string]float64
	failure   string
	atStart   emu.EngineStats
	start     time.Time
	startErr  error
	probe     NoiseProbe
}

// newCellLedger makes a cell's ledger over its meter, its records' sink
// and its host-noise probe. expected is how many records the workload
// plans (workload.Info.Records; 0 when it cannot say): the ledger makes
// room for them at once, as a slice grown by appending holds up to twice
// its records and copies them at each doubling, which for a cell of a
// million records was most of its peak memory.
func NewCellLedger(m Meter, sink func(results.Record) error, newProbe func() NoiseProbe, expected int) *cellLedger {
	l := &cellLedger{meter: m, sink: sink, newProbe: newProbe, Facts: map[string]float64{}}
	if expected > 0 {
		// A margin for the records a run adds beyond its plan (a
		// re-sent request, a late one), bounded by the scenario's budget.
		l.records = make([]results.Record, 0, min(expected+expected/64+16, workload.MaxRecordsPerCell+16))
	}
	return l
}

// env is the workload's Env over the ledger.
func (l *cellLedger) Env(p *proto.Stack, s proto.Settings, h workload.Hosts) *workload.Env {
	return &workload.Env{Protocol: p, Settings: s, Hosts: h, Emit: l.emit, StartWindow: l.StartWindow, Note: l.note, Fail: l.fail}
}

func (l *cellLedger) emit(r results.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	if r.OK() {
		l.lastDelay = r.DelayMs
	}
	if l.sink != nil && l.sinkErr == nil {
		l.sinkErr = l.sink(r)
	}
}

// startWindow reads the link counters, resets the emulator's release
// statistics and starts the host-noise probe afresh. A later call moves
// the window's start.
func (l *cellLedger) StartWindow() {
	s, err := l.meter.Stats()
	if err == nil {
		err = l.meter.ResetLateness()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.atStart, l.start, l.startErr = s, time.Now(), err
	if l.probe != nil {
		l.probe.Stop()
	}
	l.probe = l.newProbe()
}

func (l *cellLedger) note(name string, v float64) {
	l.mu.Lock()
	l.Facts[name] = v
	l.mu.Unlock()
}

// fail keeps the first reason: a later one is a consequence.
func (l *cellLedger) fail(reason string) {
	l.mu.Lock()
	if l.failure == "" {
		l.failure = reason
	}
	l.mu.Unlock()
}

// progress is how many records came so far, and the last delay.
func (l *cellLedger) Progress() (int, float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records), l.lastDelay
}

// stopProbe ends the window's host-noise probe and returns its sample.
func (l *cellLedger) StopProbe() hostnoise.Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probe == nil {
		return hostnoise.Sample{}
	}
	s := l.probe.Stop()
	l.probe = nil
	return s
}

// err is the sink's or the window start's error.
func (l *cellLedger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.sinkErr, l.startErr)
}

// emulatorFacts are the cell's figures of its emulator, which result fills
// in (unknown, NaN, when no emulator ran: a remote cell).
var emulatorFacts = []string{"emu_release_p50_us", "emu_release_p99_us", "emu_release_p999_us", "emu_release_max_us",
	"emu_read_lag_p99_us", "emu_read_lag_max_us", "emu_loop_switches_per_s", "emu_busy_pct", "emu_kernel_drops", "emu_cpu_s"}

// result accounts for the window: each link's counters since its start,
// the measured link seen from the workload's first role (its up is what
// that role sends), and the instrument's facts. Call it after the workload
// returned.
func (l *cellLedger) Result(end emu.EngineStats, measured string, upIsAtoB bool, overlaps []testbed.LiveRun, host hostnoise.Sample) CellResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := CellResult{Records: l.records, WindowStart: l.start, Links: map[string]emu.LinkStats{}, Release: end.Lateness, Overlaps: overlaps, Host: host, Failed: l.failure}
	for _, ls := range end.Links {
		before, _ := l.atStart.Link(ls.Name)
		res.Links[ls.Name] = emu.LinkStats{Name: ls.Name, Up: ls.Up.Sub(before.Up), Down: ls.Down.Sub(before.Down)}
	}
	res.Window = res.Links[measured]
	if !upIsAtoB {
		res.Window.Up, res.Window.Down = res.Window.Down, res.Window.Up
	}
	f := l.Facts
	f["emu_release_p50_us"], f["emu_release_p99_us"] = end.Lateness.P50, end.Lateness.P99
	f["emu_release_p999_us"], f["emu_release_max_us"] = end.Lateness.P999, end.Lateness.Max
	f["emu_read_lag_p99_us"], f["emu_read_lag_max_us"] = end.ReadLag.P99, end.ReadLag.Max
	loop := end.Loop.Sub(l.atStart.Loop)
	if window := float64(end.ClockNs - l.atStart.ClockNs); window > 0 {
		f["emu_loop_switches_per_s"] = float64(loop.VoluntarySwitches+loop.InvoluntarySwitches) / (window / 1e9)
		f["emu_busy_pct"] = float64(loop.BusyNs) / window * 100
	}
	f["emu_kernel_drops"] = float64(loop.KernelDrops)
	f["emu_cpu_s"] = float64(loop.CPUNs) / 1e9
	f["overlapping_runs"] = float64(len(overlaps))
	f["host_steal_pct"], f["host_wakeup_p99_us"], f["host_wakeup_max_us"] = host.StealPct, host.WakeP99Us, host.WakeMaxUs
	if host.Wakeups == 0 {
		// The probe saw nothing (its child failed): the host's noise is
		// unknown, not zero, and the quality rule says so.
		f["host_steal_pct"], f["host_wakeup_p99_us"], f["host_wakeup_max_us"] = math.NaN(), math.NaN(), math.NaN()
	}
	return res
}
