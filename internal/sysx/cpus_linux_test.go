package sysx

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func affinityOf(t *testing.T, tid int) unix.CPUSet {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		t.Fatalf("thread %d: %v", tid, err)
	}
	return set
}

// TestProcessPinMovesEveryThreadButTheSelfPinned: while held, no thread of
// the process may run on the CPU, except one that pinned itself there on
// purpose; new threads inherit the narrowed set; the last release gives
// back the original set.
func TestProcessPinMovesEveryThreadButTheSelfPinned(t *testing.T) {
	cpu := EmulatorCPU()
	if cpu < 0 {
		t.Skip("one CPU: nothing to keep off")
	}
	orig := affinityOf(t, 0)
	if !orig.IsSet(cpu) {
		t.Skipf("this process may not run on CPU %d anyway", cpu)
	}
	// A thread that pinned itself to the CPU (a per-CPU probe).
	self := make(chan int)
	stop := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its affinity
		var only unix.CPUSet
		only.Set(cpu)
		unix.SchedSetaffinity(0, &only)
		self <- unix.Gettid()
		<-stop
	}()
	pinnedTid := <-self
	defer close(stop)

	var pin ProcessPin
	releaseA, err := pin.Hold(cpu)
	if err != nil {
		t.Fatal(err)
	}
	releaseB, err := pin.Hold(cpu) // a second testbed
	if err != nil {
		t.Fatal(err)
	}
	// A thread started while held inherits the narrowed set.
	born := make(chan int)
	go func() {
		runtime.LockOSThread()
		born <- unix.Gettid()
		<-stop
	}()
	newTid := <-born

	check := func(when string, wantOn bool) {
		tids, err := threadIDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, tid := range tids {
			set := affinityOf(t, tid)
			switch {
			case tid == pinnedTid:
				if set.Count() != 1 || !set.IsSet(cpu) {
					t.Errorf("%s: the self-pinned thread was moved: %d CPUs", when, set.Count())
				}
			case set.IsSet(cpu) != wantOn:
				t.Errorf("%s: thread %d (new %d, self %d) may run on CPU %d: %v, want %v (%d CPUs)", when, tid, newTid, pinnedTid, cpu, set.IsSet(cpu), wantOn, set.Count())
			}
		}
	}
	check("held twice", false)
	if set := affinityOf(t, newTid); set.IsSet(cpu) {
		t.Error("a thread started while held may run on the CPU")
	}
	releaseA()
	releaseA() // a second call is a no-op, not a second release
	check("one holder left", false)
	releaseB()
	check("released", true)
	if got := affinityOf(t, 0); got != orig {
		t.Errorf("after release the affinity is %d CPUs, was %d", got.Count(), orig.Count())
	}
}

// A process that starts already off the CPU (an emulator started while
// another testbed holds its parent off it) has nothing to move: moving
// threads from a set to the same set must not count as moving them.
func TestMoveThreadsToTheSameSetIsNothing(t *testing.T) {
	set := affinityOf(t, 0)
	if err := MoveThreads(set, set, 0); err != nil {
		t.Fatal(err)
	}
}
