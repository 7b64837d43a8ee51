package hostnoise

import (
	"math"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestProbeSeesItsOwnWakeups: a 300 ms probe waking every millisecond
// wakes about 300 times on every CPU, and its figures are ordered and
// sane. (How large they are is the host's business; calibrate reports
// them.)
func TestProbeSeesItsOwnWakeups(t *testing.T) {
	p := StartEvery(time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	s := p.Stop()
	want := 300 * runtime.NumCPU()
	if s.Wakeups < want/3 || s.Wakeups > want*2 {
		t.Errorf("%d wake-ups in 300 ms on %d CPUs, want about %d", s.Wakeups, runtime.NumCPU(), want)
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
	if d := time.Since(t0); d > 500*time.Millisecond {
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
	if s.Wakeups < 100 || s.WindowS < 0.15 {
		t.Errorf("the child's sample: %+v", s)
	}
}
