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

// TestKeepProcessOffMovesEveryThreadButTheSelfPinned: afterwards no thread
// of the process may run on the CPU, except one that pinned itself there on
// purpose, and new threads inherit the narrowed set. (The test gives the
// process its CPUs back at the end.)
func TestKeepProcessOffMovesEveryThreadButTheSelfPinned(t *testing.T) {
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

	if err := KeepProcessOff(cpu); err != nil {
		t.Fatal(err)
	}
	off := orig
	off.Clear(cpu)
	defer MoveThreads(off, orig, 0)
	// A thread started afterwards inherits the narrowed set.
	born := make(chan int)
	go func() {
		runtime.LockOSThread()
		born <- unix.Gettid()
		<-stop
	}()
	newTid := <-born

	tids, err := threadIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		set := affinityOf(t, tid)
		switch {
		case tid == pinnedTid:
			if set.Count() != 1 || !set.IsSet(cpu) {
				t.Errorf("the self-pinned thread was moved: %d CPUs", set.Count())
			}
		case set.IsSet(cpu):
			t.Errorf("thread %d (new %d, self %d) may run on CPU %d (%d CPUs)", tid, newTid, pinnedTid, cpu, set.Count())
		}
	}
	if set := affinityOf(t, newTid); set.IsSet(cpu) {
		t.Error("a thread started afterwards may run on the CPU")
	}
}

// A process that starts already off the CPU (an emulator whose parent is
// kept off it) has nothing to move: moving
// threads from a set to the same set must not count as moving them.
func TestMoveThreadsToTheSameSetIsNothing(t *testing.T) {
	set := affinityOf(t, 0)
	if err := MoveThreads(set, set, 0); err != nil {
		t.Fatal(err)
	}
}
