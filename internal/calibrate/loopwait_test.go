package calibrate

import (
	"bufio"

	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// contextSwitches is the sum, over every thread of process pid, of its
// voluntary and involuntary context switches (/proc/PID/task/TID/status).
func contextSwitches(pid int) (uint64, error) {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, task := range tasks {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "status"))
		if err != nil {
			continue // the thread has exited
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.HasSuffix(name, "ctxt_switches") {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
		f.Close()
	}
	return sum, nil
}

// TestLoopWaitsWakeNoOtherThread: at 10 Mbit/s through 10 ms (1400-byte
// datagrams, 1.16 ms apart), the adaptive loop blocks about twice a frame:
// until the frame arrives, and until its release less the spin. Each
// block is one voluntary context switch of the loop's thread, so 2 a
// frame, plus the runtime's monitor thread, which naps while the loop
// runs. A wait made the ordinary way hands the loop's P to another thread
// and takes it back: measured, about 7 switches a frame over the engine's
// threads (strace -c: 5 futex, 3.5 nanosleep, 2 epoll_pwait2 a frame), 3
// with the short waits raw. Over 2 s the engine's threads must switch
// fewer than 4.5 times a frame: the loop's 2, and the monitor's naps.
func TestLoopWaitsWakeNoOtherThread(t *testing.T) {
	tbtest.RequirePrivileges(t)
	d := emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: d, Down: d}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	pid := tb.Emulator().PID()
	before, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	cs0, err := contextSwitches(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := udpAtRate(tb.Host("client"), 10e6, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	cs1, err := contextSwitches(pid)
	if err != nil {
		t.Fatal(err)
	}
	after, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	frames := after.Links[0].Up.Sub(before.Links[0].Up).TxPackets
	if frames < 1000 {
		t.Fatalf("%d frames carried in 2 s at 10 Mbit/s, want about 1730", frames)
	}
	perFrame := float64(cs1-cs0) / float64(frames)
	t.Logf("%d context switches of the engine's threads for %d frames: %.2f a frame", cs1-cs0, frames, perFrame)
	if perFrame >= 4.5 {
		t.Errorf("%.2f context switches a frame, want under 4.5: the loop's waits wake the runtime's threads", perFrame)
	}
}
