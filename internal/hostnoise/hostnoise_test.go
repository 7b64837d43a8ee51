package hostnoise

import (
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/racedetect"
)

// TestProbeSeesItsOwnWakeups: a 300 ms probe waking every millisecond
// wakes about 300 times on every CPU it probes, and its figures are ordered and
// sane. (How large they are is the host's business; calibrate reports
// them.)
func TestProbeSeesItsOwnWakeups(t *testing.T) {
	p := StartEvery(time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	s := p.Stop()
	want := 300 * len(probedCPUs())
	if s.Wakeups < want/3 || s.Wakeups > want*2 {
		t.Errorf("%d wake-ups in 300 ms on %d CPUs, want about %d", s.Wakeups, len(probedCPUs()), want)
	}
	if !(s.WakeP50Us >= 0 && s.WakeP50Us <= s.WakeP99Us && s.WakeP99Us <= s.WakeMaxUs) {
		t.Errorf("wake-up quantiles out of order: %+v", s)
	}
	if s.StealPct < 0 || s.StealPct > 100 || math.IsNaN(s.StealPct) {
		t.Errorf("steal %.2f %%", s.StealPct)
	}
}

// TestStopIsPrompt: a probe with a long interval stops at once, not at the
// end of its threads' sleep.
func TestStopIsPrompt(t *testing.T) {
	p := StartEvery(time.Hour)
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	p.Stop()
	if d := time.Since(t0); d > time.Duration(racedetect.Slowdown())*500*time.Millisecond {
		t.Errorf("Stop took %v", d)
	}
}

func TestMain(m *testing.M) {
	RunChildIfRequested()
	os.Exit(m.Run())
}

// TestProbeRunsInAChild: the probe samples in a process of its own (so
// that its sleeping threads hold none of tlab's runtime processors), and
// hands its sample back.
func TestProbeRunsInAChild(t *testing.T) {
	p := StartEvery(time.Millisecond)
	if p.child == nil {
		t.Fatal("the probe did not start a child process")
	}
	time.Sleep(200 * time.Millisecond)
	s := p.Stop()
	// 200 ms at 1 ms on one or more CPUs: a probe that sampled at all
	// has tens of wake-ups even on a host busy enough to swallow slots;
	// its window starts when the child has started (tens of ms on a
	// busy host) and ends when it is stopped.
	if s.Wakeups < 20 || s.WindowS < 0.05 || s.WindowS > 1 {
		t.Errorf("the child's sample: %+v", s)
	}
}

// TestParseProcFixtures reads /proc/stat and PSI text as the kernel
// writes it (proc(5), Documentation/accounting/psi.rst), with figures
// worked out by hand.
func TestParseProcFixtures(t *testing.T) {
	// A VM's line: user nice system idle iowait irq softirq steal guest
	// guest_nice. Total of the first eight: 10132153 + 290696 + 3084719 +
	// 46828483 + 16683 + 0 + 25195 + 175628 = 60553557; steal 175628
	// (0.29 %). Guest time (the ninth and tenth) is inside user.
	stat := "cpu  10132153 290696 3084719 46828483 16683 0 25195 175628 5000 7\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n"
	if got := parseCPUTimes([]byte(stat)); got.total != 60553557 || got.steal != 175628 {
		t.Errorf("/proc/stat: %+v, want total 60553557, steal 175628", got)
	}
	// An old kernel without steal: no steal, the rest counted.
	if got := parseCPUTimes([]byte("cpu 1 2 3 4\n")); got.total != 10 || got.steal != 0 {
		t.Errorf("four fields: %+v", got)
	}
	for _, bad := range []string{"", "\n", "intr 1 2\n", "cpu\n"} {
		if got := parseCPUTimes([]byte(bad)); got != (cpuTimes{}) {
			t.Errorf("%q: %+v", bad, got)
		}
	}
	psi := "some avg10=1.50 avg60=0.80 avg300=0.20 total=12345678\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=999\n"
	if got := parsePressure([]byte(psi)); got != 12345678 {
		t.Errorf("PSI some total: %v, want 12345678 (not full's 999)", got)
	}
	if got := parsePressure([]byte("full avg10=0.00 total=5\n")); !math.IsNaN(got) {
		t.Errorf("PSI without a some line: %v", got)
	}
}

// TestProbeDetectsANoisyNeighbour: a real-time thread on each CPU that
// holds it for 20 ms of every 50 ms is a neighbour the probe must see: a
// probe thread waiting on that CPU cannot wake until the burst ends, so
// its worst wake-up is late by most of 20 ms, and such stalls are
// several per cent of its wake-ups. (A probe reporting 0 µs fails.)
func TestProbeDetectsANoisyNeighbour(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a real-time neighbour needs root")
	}
	stop := make(chan struct{})
	started := make(chan error, runtime.NumCPU())
	var done sync.WaitGroup
	for cpu := range runtime.NumCPU() {
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread() // never unlocked: the thread dies with its priority
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				started <- err
				return
			}
			if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 10}, 0); err != nil {
				started <- err
				return
			}
			started <- nil
			for {
				select {
				case <-stop:
					return
				default:
				}
				for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
				}
				time.Sleep(30 * time.Millisecond)
			}
		}()
	}
	for range runtime.NumCPU() {
		if err := <-started; err != nil {
			close(stop)
			done.Wait()
			t.Skipf("no real-time neighbour here: %v", err)
		}
	}
	p := StartEvery(time.Millisecond)
	time.Sleep(600 * time.Millisecond)
	s := p.Stop()
	close(stop)
	done.Wait()
	if s.WakeMaxUs < 10000 || s.WakeP99Us < 1000 {
		t.Errorf("beside a neighbour holding each CPU 20 ms in 50: wake-up p99 %.0f us, max %.0f us; want at least 1 ms and 10 ms", s.WakeP99Us, s.WakeMaxUs)
	}
	t.Logf("beside the neighbour: %d wake-ups, p50 %.0f us, p99 %.0f us, max %.0f us", s.Wakeups, s.WakeP50Us, s.WakeP99Us, s.WakeMaxUs)
}
