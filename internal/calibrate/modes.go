package calibrate

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/units"
)

// timerModesStep is the name of calibration's step that measures every
// timer mode.
const timerModesStep = "timer modes"

// ModeMeasurement is what calibration measured of one timer mode on this
// machine: its release error under the probe flood and its CPU.
type ModeMeasurement struct {
	Mode         string
	ReleaseP50Us float64
	ReleaseP99Us float64
	// CPUPct is the engine process's CPU time over the window, as a
	// share of one core.
	CPUPct float64
}

// ModeAdvice is the mode calibration recommends for this machine and why.
type ModeAdvice struct {
	Mode   string
	Reason string
}

// modePreference breaks ties in CPU: the mode that blocks when idle first.
var modePreference = []string{emu.ModeAdaptive, emu.ModeSleep, emu.ModeBusy}

// RecommendMode chooses a timer mode from each mode's measurements on this
// machine and the host's wake-up tail (the p99 of how late a sleeping
// thread wakes, measured beside them):
//   - the modes whose release error p99 meets calibration's target
//     (targetReleaseP99Us) are accurate enough; of them, the one that
//     costs the least CPU;
//   - when none meets it, the host's stalls set every mode's tail (on a
//     loaded host, tens of milliseconds that differ from window to
//     window by more than the modes do), so the modes are told apart
//     where the loop itself shows, at the median: of the modes whose
//     release error p50 meets its target (targetReleaseP50Us), or when
//     none does, of those within that target of the best p50, the one
//     that costs the least CPU.
//
// Ties in CPU go to adaptive, then sleep, then busy. It returns no advice
// without measurements.
func RecommendMode(ms []ModeMeasurement, wakeP99Us float64) ModeAdvice {
	if len(ms) == 0 {
		return ModeAdvice{}
	}
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b ModeMeasurement) int {
		return slices.Index(modePreference, a.Mode) - slices.Index(modePreference, b.Mode)
	})
	cheapest := func(ok func(ModeMeasurement) bool) (ModeMeasurement, bool) {
		var best ModeMeasurement
		found := false
		for _, m := range ms {
			if ok(m) && (!found || m.CPUPct < best.CPUPct) {
				best, found = m, true
			}
		}
		return best, found
	}
	others := func(chosen ModeMeasurement) string {
		s := ""
		for _, m := range ms {
			if m.Mode != chosen.Mode {
				s += fmt.Sprintf("; %s: p50 %.1f µs, p99 %.0f µs, %.1f %%", m.Mode, m.ReleaseP50Us, m.ReleaseP99Us, m.CPUPct)
			}
		}
		return s
	}
	if m, ok := cheapest(func(m ModeMeasurement) bool { return m.ReleaseP99Us <= targetReleaseP99Us }); ok {
		return ModeAdvice{Mode: m.Mode, Reason: fmt.Sprintf(
			"%s keeps the release error's p99 within %g µs (%.0f µs) at the least CPU: %.1f %% of a core under a 1 kHz probe flood%s",
			m.Mode, targetReleaseP99Us, m.ReleaseP99Us, m.CPUPct, others(m))}
	}
	limit := targetReleaseP50Us
	if best := slices.MinFunc(ms, func(a, b ModeMeasurement) int { return cmp.Compare(a.ReleaseP50Us, b.ReleaseP50Us) }); best.ReleaseP50Us > limit {
		limit = best.ReleaseP50Us + targetReleaseP50Us
	}
	m, _ := cheapest(func(m ModeMeasurement) bool { return m.ReleaseP50Us <= limit })
	return ModeAdvice{Mode: m.Mode, Reason: fmt.Sprintf(
		"no mode keeps the release error's p99 within %g µs on this host now (its wake-up p99 %.0f µs: the host sets the tail); at the median, %s is within %.1f µs at the least CPU: p50 %.1f µs, %.1f %% of a core%s",
		targetReleaseP99Us, wakeP99Us, m.Mode, limit, m.ReleaseP50Us, m.CPUPct, others(m))}
}

// measureTimerModes measures every timer mode's release error and CPU
// under calibration's probe load (a 5 ms link each way, a 64-byte frame
// to a black hole every millisecond), the modes in alternate order over
// rounds (A B C C B A ...) so that the host's drift weighs on all, and
// reports each mode's medians over the rounds.
func measureTimerModes(r *Report, opts Options) ([]ModeMeasurement, error) {
	rounds := opts.scale(3, 1)
	window := opts.dur(2*time.Second, time.Second)
	modes := modePreference
	got := map[string][]ModeMeasurement{}
	for round := 0; round < rounds; round++ {
		order := slices.Clone(modes)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, mode := range order {
			m, err := measureMode(opts, mode, window)
			if err != nil {
				return nil, fmt.Errorf("%s mode: %w", mode, err)
			}
			got[mode] = append(got[mode], m)
		}
	}
	var out []ModeMeasurement
	for _, mode := range modes {
		med := func(f func(ModeMeasurement) float64) float64 {
			var v []float64
			for _, m := range got[mode] {
				v = append(v, f(m))
			}
			slices.Sort(v)
			return percentile(v, 0.5)
		}
		m := ModeMeasurement{
			Mode:         mode,
			ReleaseP50Us: med(func(m ModeMeasurement) float64 { return m.ReleaseP50Us }),
			ReleaseP99Us: med(func(m ModeMeasurement) float64 { return m.ReleaseP99Us }),
			CPUPct:       med(func(m ModeMeasurement) float64 { return m.CPUPct }),
		}
		detail := fmt.Sprintf("median of %d window(s) of %v, a 5 ms link each way under a 1 kHz probe flood", rounds, window)
		addInfo(r, "timer_mode_"+mode+"_release_p50", m.ReleaseP50Us, "us", detail)
		addInfo(r, "timer_mode_"+mode+"_release_p99", m.ReleaseP99Us, "us", "")
		addInfo(r, "timer_mode_"+mode+"_engine_cpu_pct", m.CPUPct, "%", "the engine process's CPU time as a share of a core (getrusage)")
		out = append(out, m)
	}
	return out, nil
}

// measureMode is one window of measureTimerModes.
func measureMode(opts Options, mode string, window time.Duration) (ModeMeasurement, error) {
	m := ModeMeasurement{Mode: mode}
	d := emu.DirectionConfig{Delay: units.Duration(5 * time.Millisecond)}
	o := opts
	o.Emulator.Mode = mode
	err := withTestbed(o, emu.LinkConfig{Up: d, Down: d}, false, func(tb *testbed.Testbed, c, _ *testbed.Host) error {
		// Neighbours resolved and the loop settled before the window.
		if err := pacedFlood(c, 100*time.Millisecond, time.Millisecond); err != nil {
			return err
		}
		if err := tb.Emulator().ResetLateness(); err != nil {
			return err
		}
		before, err := tb.Emulator().Stats()
		if err != nil {
			return err
		}
		if err := pacedFlood(c, window, time.Millisecond); err != nil {
			return err
		}
		after, err := tb.Emulator().Stats()
		if err != nil {
			return err
		}
		m.ReleaseP50Us, m.ReleaseP99Us = after.Lateness.P50, after.Lateness.P99
		if ns := after.ClockNs - before.ClockNs; ns > 0 {
			m.CPUPct = float64(after.Loop.CPUNs-before.Loop.CPUNs) / float64(ns) * 100
		}
		return nil
	})
	return m, err
}
