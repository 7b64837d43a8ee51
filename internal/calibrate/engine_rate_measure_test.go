package calibrate

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// hostCPU reads the machine's busy and total CPU time from /proc/stat (in
// clock ticks, all CPUs): the load beside a measurement of the engine.
func hostCPU() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle and iowait
			busy += n
		}
	}
	return busy, total
}

// loadAvg is the first field of /proc/loadavg.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// TestMeasureEngineCostPerGbit is a measurement, not a test: with
// TLAB_MEASURE_RATE set to a rate in Mbit/s it offers paced UDP (1400-byte
// datagrams to a black hole) at that rate through a 10 ms link in the
// binary's default timer mode for TLAB_MEASURE_WINDOW (default 10s), and
// logs one line: the engine process's CPU time (from /proc), the bits it
// carried, CPU seconds per Gbit, its release error, and the host's load
// beside it (load average, the share of all CPUs busy over the window).
// With TLAB_MEASURE_PERF=FILE it also records the engine with perf for
// the middle of the window. TLAB_MEASURE_MODE picks another timer mode
// (busy, sleep, adaptive) and TLAB_MEASURE_RT a SCHED_FIFO priority for
// the engine's loop (testbed.Options.RealtimePriority), TLAB_MEASURE_SPIN
// sleep mode's spin (a duration), TLAB_MEASURE_DEFER=1 deferred reads,
// TLAB_MEASURE_LINK_MBIT a rate limit on the link (Mbit/s).
// With TLAB_MEASURE_SYSCALLS=1 it counts the engine's system calls over
// the window (perf stat, the raw_syscalls:sys_enter tracepoint) and its
// context switches, and logs both per frame carried. Run it from two
// test binaries (an old build and a new one), or with two settings, in
// turns A B B A to compare engines:
//
//	go test -c -o /tmp/new.test ./internal/calibrate
//	TLAB_MEASURE_RATE=10 /tmp/new.test -test.run TestMeasureEngineCostPerGbit -test.v
//	TLAB_MEASURE_RATE=10 TLAB_MEASURE_RT=50 /tmp/new.test -test.run TestMeasureEngineCostPerGbit -test.v
func TestMeasureEngineCostPerGbit(t *testing.T) {
	mbit, _ := strconv.ParseFloat(os.Getenv("TLAB_MEASURE_RATE"), 64)
	if mbit <= 0 {
		t.Skip("a measurement: set TLAB_MEASURE_RATE to a rate in Mbit/s")
	}
	tbtest.RequirePrivileges(t)
	window := 10 * time.Second
	if w, err := time.ParseDuration(os.Getenv("TLAB_MEASURE_WINDOW")); err == nil {
		window = w
	}
	opts := testbed.Options{Seed: 1}
	opts.Emulator.Mode = os.Getenv("TLAB_MEASURE_MODE")
	opts.Emulator.DeferReads = os.Getenv("TLAB_MEASURE_DEFER") == "1"
	if spin, err := time.ParseDuration(os.Getenv("TLAB_MEASURE_SPIN")); err == nil {
		opts.Spin = spin // sleep mode's spin
	}
	if rt := os.Getenv("TLAB_MEASURE_RT"); rt != "" {
		prio, err := strconv.Atoi(rt)
		if err != nil {
			t.Fatalf("TLAB_MEASURE_RT=%q: %v", rt, err)
		}
		opts.RealtimePriority = prio
	}
	d := emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond)}
	if r, err := strconv.ParseFloat(os.Getenv("TLAB_MEASURE_LINK_MBIT"), 64); err == nil {
		d.Rate = units.Bitrate(r * 1e6) // a rate limit on the link too
	}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: d, Down: d}), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	time.Sleep(300 * time.Millisecond)
	pid := tb.Emulator().PID()
	if err := tb.Emulator().ResetLateness(); err != nil {
		t.Fatal(err)
	}
	before, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	var perf *exec.Cmd
	if out := os.Getenv("TLAB_MEASURE_PERF"); out != "" {
		perf = exec.Command("perf", "record", "-g", "-o", out, "-p", strconv.Itoa(pid), "--", "sleep", fmt.Sprint(int(window.Seconds()/2)))
		if err := perf.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var syscalls *exec.Cmd
	var syscallsOut strings.Builder
	if os.Getenv("TLAB_MEASURE_SYSCALLS") == "1" {
		syscalls = exec.Command("perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter,context-switches", "-p", strconv.Itoa(pid), "--", "sleep", fmt.Sprint(window.Seconds()))
		syscalls.Stderr = &syscallsOut
		if err := syscalls.Start(); err != nil {
			t.Fatal(err)
		}
	}
	load0 := loadAvg()
	hb0, ht0 := hostCPU()
	cpu0, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := udpAtRate(tb.Host("client"), mbit*1e6, window); err != nil {
		t.Fatal(err)
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	hb1, ht1 := hostCPU()
	after, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	if perf != nil {
		perf.Wait()
	}
	if syscalls != nil {
		syscalls.Wait()
		// perf stat -x, writes "count,unit,event,..." a line per event,
		// in the order given.
		var counts [2]float64
		for i, line := range strings.SplitN(strings.TrimSpace(syscallsOut.String()), "\n", 2) {
			counts[i], _ = strconv.ParseFloat(strings.SplitN(strings.TrimSpace(line), ",", 2)[0], 64)
		}
		up := after.Links[0].Up.Sub(before.Links[0].Up)
		frames := float64(max(up.TxPackets, 1))
		t.Logf("system calls of the engine over the window: %.0f, %.2f per frame carried (%d frames); context switches %.0f, %.2f per frame", counts[0], counts[0]/frames, up.TxPackets, counts[1], counts[1]/frames)
	}
	up := after.Links[0].Up.Sub(before.Links[0].Up)
	gbit := float64(up.TxBytes) * 8 / 1e9
	l := after.Lateness
	t.Logf("mode %q rt %d rate %g Mbit/s: cpu %.3f s in %.1f s (%.1f %% of a core); carried %.3f Gbit (%d frames, %.1f Mbit/s) = %.2f cpu s/Gbit; release error p50 %.1f p99 %.1f p99.9 %.1f max %.0f us; spin %.1f us; wakeups %d; load %s -> %s, host cpu busy %.0f %%",
		opts.Emulator.Mode, opts.RealtimePriority, mbit, cpu1.Seconds()-cpu0.Seconds(), elapsed.Seconds(), 100*(cpu1-cpu0).Seconds()/elapsed.Seconds(),
		gbit, up.TxPackets, gbit*1e3/elapsed.Seconds(), (cpu1-cpu0).Seconds()/max(gbit, 1e-9),
		l.P50, l.P99, l.P999, l.Max, float64(after.SpinNs)/1e3, after.Wakeups-before.Wakeups, load0, loadAvg(), 100*float64(hb1-hb0)/float64(max(ht1-ht0, 1)))
}

// TestMeasureForwardingAndReleaseError is a measurement, not a test: with
// TLAB_MEASURE_STEPS set it runs calibration's forwarding step ("forwarding":
// the most packets a second through a zero-delay link, 1400 and 64-byte
// payloads, and one TCP flow's goodput) or its delay step ("delay": the
// release error at 5 and 25 ms under a 1 kHz probe flood, and the idle
// cost), in the binary's default mode, full length, and logs the figures
// with the host's load: run from an old and a new test binary in turns
// A B B A to compare engines.
func TestMeasureForwardingAndReleaseError(t *testing.T) {
	steps := map[string]func(*Report, Options) error{"forwarding": forwarding, "delay": delayAccuracy}
	step, ok := steps[os.Getenv("TLAB_MEASURE_STEPS")]
	if !ok {
		t.Skip("a measurement: set TLAB_MEASURE_STEPS to forwarding or delay")
	}
	tbtest.RequirePrivileges(t)
	load0 := loadAvg()
	hb0, ht0 := hostCPU()
	rep := &Report{}
	if err := step(rep, Options{Seed: 1}); err != nil {
		t.Logf("step: %v", err)
	}
	hb1, ht1 := hostCPU()
	var b strings.Builder
	for _, c := range append(rep.Checks, rep.Info...) {
		if strings.HasPrefix(c.Name, "forwarding_") && !strings.HasSuffix(c.Name, "_pps") && !strings.HasSuffix(c.Name, "_mbps") && !strings.HasSuffix(c.Name, "_cpu_s") {
			continue
		}
		if strings.HasPrefix(c.Name, "release_") && (strings.Contains(c.Name, "_engine_") || strings.Contains(c.Name, "switches")) && !strings.HasSuffix(c.Name, "_cpu_s") {
			continue
		}
		fmt.Fprintf(&b, " %s=%g", c.Name, c.Value)
	}
	t.Logf("%s:%s; load %s -> %s, host cpu busy %.0f %%", os.Getenv("TLAB_MEASURE_STEPS"), b.String(), load0, loadAvg(), 100*float64(hb1-hb0)/float64(max(ht1-ht0, 1)))
}
