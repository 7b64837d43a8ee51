package calibrate

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// TestDeferredReadsKeepASparseDirectionOnTime: the adaptive loop leaves
// arrivals unread while frames wait in the delay line, but must read them
// before any can be due: by the last empty read plus the shortest hold.
// Here the down direction holds a frame every 50 ms for 200 ms, so the
// line is never empty and its next release is up to 50 ms away, while up
// frames (5 ms) arrive at irregular intervals of 11 to 29 ms. A loop that
// waited for the line's next release to read would release a typical up
// frame tens of milliseconds late (it arrives somewhere in a 50 ms gap);
// one that keeps the read deadline releases it within a wake-up. The
// median release error must be under half the up direction's hold
// (2.5 ms): 20 times a loaded host's median wake-up (about 0.1 ms here)
// and a tenth of the error of a loop that misses the deadline.
func TestDeferredReadsKeepASparseDirectionOnTime(t *testing.T) {
	tbtest.RequirePrivileges(t)
	up := emu.DirectionConfig{Delay: units.Duration(5 * time.Millisecond)}
	down := emu.DirectionConfig{Delay: units.Duration(200 * time.Millisecond)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: up, Down: down}), testbed.Options{Seed: 1, Emulator: emu.EngineOptions{Mode: emu.ModeAdaptive, DeferReads: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	const window = 2 * time.Second
	// The down direction's frames fill the line first.
	downDone := make(chan error, 1)
	go func() { downDone <- pacedFlood(tb.Host("server"), window+300*time.Millisecond, 50*time.Millisecond) }()
	time.Sleep(300 * time.Millisecond)
	if err := tb.Emulator().ResetLateness(); err != nil {
		t.Fatal(err)
	}
	err = withBlackhole(tb.Host("client"), func(fd int) error {
		msg := make([]byte, 64)
		gaps := []time.Duration{11, 23, 17, 29}
		start := time.Now()
		for i := 0; time.Since(start) < window; i++ {
			if _, err := retry(func() (int, error) { return unix.Write(fd, msg) }); err != nil {
				return err
			}
			time.Sleep(gaps[i%len(gaps)] * time.Millisecond)
		}
		return nil
	})
	if err := errors.Join(err, <-downDone); err != nil {
		t.Fatal(err)
	}
	st, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	l := st.Lateness
	t.Logf("%d releases, error p50 %.1f p99 %.1f max %.0f µs; spin %.1f µs", l.N, l.P50, l.P99, l.Max, float64(st.SpinNs)/1e3)
	if l.N < 100 {
		t.Fatalf("only %d releases in %v: the load did not run", l.N, window)
	}
	if l.P50 > 2500 {
		t.Errorf("release error p50 %.1f µs, want under 2500 µs: up frames were read after they were due", l.P50)
	}
}
