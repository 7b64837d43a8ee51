// Package hostnoise measures how much the machine disturbs timing: a
// thread per CPU (every CPU but the emulator's, whose loop each of its
// wake-ups would preempt) sleeps to absolute times (every 10 ms by
// default) and records how late it wakes, as cyclictest does; beside that
// it reads the CPU time the hypervisor stole (/proc/stat) and the kernel's
// CPU pressure (/proc/pressure/cpu). A probe runs for the length of a cell or of a
// calibration step, in a child process (tlab re-executes itself, see
// RunChildIfRequested), because in-process its threads competed with
// tlab's own goroutines for the runtime's Ps and made a send-lateness
// test fail 2 times in 8 (0 in 8 with the probe in a child).
//
// The threads run at normal priority, so their waits include tlab's own
// busy threads (the emulator polls a CPU); steal is the clean measure of
// the host. Real-time priority (cyclictest's -p, here TLAB_PROBE_RT=1)
// was measured to disturb what it measures: a Go thread at SCHED_FIFO
// that returns from its sleep while the runtime's Ps are busy delays
// tlab's own scheduler thread, and a test of send lateness failed 2 times
// in 5 with it, 0 in 11 without.
package hostnoise

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/results"
	"tlab/internal/sysx"
)

// Sample is what a probe saw over its window (results.HostNoise, which a
// calibration stores).
type Sample = results.HostNoise

// childEnv marks a process started as a probe (see RunChildIfRequested);
// its value is the interval.
const childEnv = "TLAB_HOSTNOISE_CHILD"

// RunChildIfRequested turns this process into a probe when it was started
// as one, and never returns then: it samples until its standard input
// closes (the parent asks it to stop, or died), writes what it saw as one
// JSON line and exits. Call it first in main and in TestMain, as
// emu.RunChildIfRequested.
//
// The probe runs in a process of its own because in tlab's process its
// threads, blocked in their sleep, held Go runtime processors that tlab's
// own scheduler thread needed: a test of send lateness failed 2 times in 8
// with the probe in process, 0 in 8 without.
func RunChildIfRequested() {
	v := os.Getenv(childEnv)
	if v == "" {
		return
	}
	interval, err := time.ParseDuration(v)
	if err != nil || interval <= 0 {
		interval = DefaultInterval
	}
	// The whole probe process stays off the emulator's CPU, its runtime's
	// threads too, not only the sampling threads: any of them waking
	// there would preempt the loop.
	sysx.KeepProcessOff(sysx.EmulatorCPU()) // best effort: the probe still measures
	p := startLocal(interval)
	io.Copy(io.Discard, os.Stdin)
	json.NewEncoder(os.Stdout).Encode(p.Stop())
	os.Exit(0)
}

// Probe samples the host until stopped: in a child process when it can
// start one, in this process otherwise.
type Probe struct {
	child *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
	local *localProbe
}

// localProbe is the sampling itself.
type localProbe struct {
	start     time.Time
	stat0     cpuTimes
	pressure0 float64
	stop      chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	lat       []float64 // microseconds
	realtime  bool
	interval  time.Duration
}

// DefaultInterval is how often each probe thread wakes unless told
// otherwise (TLAB_PROBE_INTERVAL, a Go duration, for experiments).
var DefaultInterval = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("TLAB_PROBE_INTERVAL")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Millisecond
}()

// Start starts a probe thread on every CPU, waking every DefaultInterval.
func Start() *Probe { return StartEvery(DefaultInterval) }

// StartEvery starts a probe whose threads wake every interval, in a child
// process (this executable, started as a probe), or in this process when
// the child cannot start.
func StartEvery(interval time.Duration) *Probe {
	p := &Probe{}
	// A process that is itself a probe's child (a test binary without the
	// hook) samples in process rather than start yet another.
	if exe, err := os.Executable(); err == nil && os.Getenv(childEnv) == "" {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), childEnv+"="+interval.String())
		cmd.Stdout = &p.out
		if stdin, err := cmd.StdinPipe(); err == nil && cmd.Start() == nil {
			p.child, p.stdin = cmd, stdin
			return p
		}
	}
	p.local = startLocal(interval)
	return p
}

// Stop ends the probe and returns what it saw (a zero sample, with no
// wake-ups, when the child failed).
func (p *Probe) Stop() Sample {
	if p.local != nil {
		return p.local.Stop()
	}
	p.stdin.Close()
	p.child.Wait()
	return parseSample(p.out.Bytes())
}

// failedSample is what a probe that saw nothing reports: no wake-ups (the
// count says the figures mean nothing) and no pressure figure.
var failedSample = Sample{PressurePct: -1}

// parseSample reads the child's one JSON line. Anything but a whole,
// plausible sample (one object, nothing after it, figures that are not
// negative, quantiles in order, steal and pressure within 0 to 100, a
// positive window when it woke) is a failed probe, never a partial one.
func parseSample(b []byte) Sample {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Sample
	if dec.Decode(&s) != nil || dec.More() {
		return failedSample
	}
	ordered := s.WakeP50Us <= s.WakeP99Us && s.WakeP99Us <= s.WakeP999Us && s.WakeP999Us <= s.WakeMaxUs
	switch {
	case s.Wakeups < 0 || s.WindowS < 0 || s.WakeP50Us < 0 || !ordered,
		s.StealPct < 0 || s.StealPct > 100,
		s.PressurePct != -1 && (s.PressurePct < 0 || s.PressurePct > 100*float64(max(1, runtime.NumCPU()))),
		s.Wakeups > 0 && s.WindowS <= 0:
		return failedSample
	}
	return s
}

// probedCPUs are the CPUs a probe samples: every one but the emulator's,
// whose busy-polling loop each wake-up would preempt (its release error
// and read lag are its own probe).
func probedCPUs() []int {
	var cpus []int
	for cpu := range runtime.NumCPU() {
		if cpu != sysx.EmulatorCPU() {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

func startLocal(interval time.Duration) *localProbe {
	p := &localProbe{start: time.Now(), stat0: readCPUTimes(), pressure0: readPressure(), stop: make(chan struct{}),
		realtime: os.Getenv("TLAB_PROBE_RT") != "", interval: interval}
	for _, cpu := range probedCPUs() {
		p.wg.Add(1)
		go p.run(cpu, p.realtime)
	}
	return p
}

// run samples on one CPU; realtime asks for SCHED_FIFO (p.realtime is
// cleared, under p.mu, when a thread cannot have it).
func (p *localProbe) run(cpu int, realtime bool) {
	defer p.wg.Done()
	runtime.LockOSThread()
	// The thread is dropped, never reused, so its affinity, priority and
	// timer slack die with it.
	var set unix.CPUSet
	set.Set(cpu)
	unix.SchedSetaffinity(0, &set)
	if realtime {
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
			p.mu.Lock()
			p.realtime = false // reported: the figures are at normal priority
			p.mu.Unlock()
		}
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	next := now.Nano()
	var lat []float64
	defer func() {
		p.mu.Lock()
		p.lat = append(p.lat, lat...)
		p.mu.Unlock()
	}()
	for !p.stopped() {
		next += p.interval.Nanoseconds()
		// A long interval is slept in steps of at most 50 ms, so that
		// Stop returns promptly; only the last step is measured.
		for {
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
			if next-now.Nano() <= int64(50*time.Millisecond) {
				break
			}
			step := unix.NsecToTimespec(now.Nano() + int64(50*time.Millisecond))
			unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &step, nil)
			if p.stopped() {
				return
			}
		}
		ts := unix.NsecToTimespec(next)
		unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		late := now.Nano() - next
		lat = append(lat, float64(late)/1e3)
		if late > p.interval.Nanoseconds() {
			// Skip the slots a long stall swallowed, as cyclictest does
			// not: one stall is one sample, not a train of them.
			next = now.Nano()
		}
	}
}

func (p *localProbe) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// Stop ends the sampling and returns what it saw.
func (p *localProbe) Stop() Sample {
	close(p.stop)
	p.wg.Wait()
	s := Sample{WindowS: time.Since(p.start).Seconds(), Wakeups: len(p.lat), RealTime: p.realtime}
	slices.Sort(p.lat)
	q := func(f float64) float64 {
		if len(p.lat) == 0 {
			return 0 // Wakeups says there was nothing to measure
		}
		return p.lat[min(len(p.lat)-1, int(math.Ceil(f*float64(len(p.lat))))-1)]
	}
	s.WakeP50Us, s.WakeP99Us, s.WakeP999Us = q(0.5), q(0.99), q(0.999)
	if len(p.lat) > 0 {
		s.WakeMaxUs = p.lat[len(p.lat)-1]
	}
	t1 := readCPUTimes()
	if total := t1.total - p.stat0.total; total > 0 {
		s.StealPct = float64(t1.steal-p.stat0.steal) / float64(total) * 100
	}
	s.PressurePct = -1 // the kernel has no PSI
	if pr := readPressure(); !math.IsNaN(pr) && !math.IsNaN(p.pressure0) && s.WindowS > 0 {
		s.PressurePct = (pr - p.pressure0) / (s.WindowS * 1e6) * 100
	}
	return s
}

type cpuTimes struct{ total, steal uint64 }

// readCPUTimes reads the all-CPU line of /proc/stat.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads the all-CPU line of /proc/stat's text: user nice
// system idle iowait irq softirq steal guest guest_nice, in clock ticks
// (proc(5)). Guest time is already counted in user, so the total is the
// first eight; a kernel that prints fewer has no steal to count.
func parseCPUTimes(b []byte) cpuTimes {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i < 8 {
			t.total += n
		}
		if i == 7 {
			t.steal = n
		}
	}
	return t
}

// readPressure returns /proc/pressure/cpu's "some" total (microseconds),
// NaN without PSI.
func readPressure() float64 {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return math.NaN()
	}
	return parsePressure(b)
}

// parsePressure reads the "some" line's total= of a PSI file: the time
// in microseconds some task waited for a CPU (the "full" line, which a
// CPU file has since Linux 5.13, is not it). NaN when there is none.
func parsePressure(b []byte) float64 {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				if n, err := strconv.ParseFloat(v, 64); err == nil {
					return n
				}
			}
		}
	}
	return math.NaN()
}
