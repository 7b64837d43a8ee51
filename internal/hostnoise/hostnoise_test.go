package hostnoise

import (
	"math"
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
