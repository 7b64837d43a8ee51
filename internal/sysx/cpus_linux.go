package sysx

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// EmulatorCPU is the CPU the testbed pins the emulator to: the last one,
// or -1 on a single-CPU machine, where nothing can be kept off it. The
// engine's process lives there whole (its loop is resumed there by its own
// thread when the runtime preempts it); the host-noise probe and the
// calibration's load generators stay off it: a busy-polling loop that
// shares its CPU is preempted, and its release error's tail grows by the
// preemption.
func EmulatorCPU() int {
	if n := runtime.NumCPU(); n > 1 {
		return n - 1
	}
	return -1
}

// AllBut is every online CPU of this process's starting set but cpu.
func AllBut(cpu int) unix.CPUSet {
	var set unix.CPUSet
	for i := range runtime.NumCPU() {
		if i != cpu {
			set.Set(i)
		}
	}
	return set
}

// threadIDs lists the threads of this process.
func threadIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// MoveThreads sets the affinity of every thread of this process whose
// affinity is from to to, except the thread skip (0 for none). Threads with
// an affinity of their own (a probe pinned to one CPU) keep it. A thread
// the process creates later inherits the affinity of the thread that
// creates it, so once every thread is moved, new ones are too; one that a
// thread not yet moved creates meanwhile is caught by another pass.
func MoveThreads(from, to unix.CPUSet, skip int) error {
	if from == to {
		return nil // started already off the CPU (the child of a process kept off it)
	}
	for pass := 0; pass < 10; pass++ {
		moved, err := moveThreadsOnce(from, to, skip)
		if err != nil || moved == 0 {
			return err
		}
	}
	return fmt.Errorf("threads kept appearing with the old affinity")
}

func moveThreadsOnce(from, to unix.CPUSet, skip int) (moved int, err error) {
	tids, err := threadIDs()
	if err != nil {
		return 0, fmt.Errorf("listing threads: %w", err)
	}
	for _, tid := range tids {
		if tid == skip {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			continue // the thread has exited
		}
		if cur != from {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &to); err != nil && err != unix.ESRCH {
			return moved, fmt.Errorf("thread %d: %w", tid, err)
		}
		moved++
	}
	return moved, nil
}

// commonAffinity is the affinity most of this process's threads share: the
// process's own, which any thread that has another (the main thread may be
// one, locked to a goroutine that pinned it) set on purpose.
func commonAffinity() (unix.CPUSet, error) {
	tids, err := threadIDs()
	if err != nil {
		return unix.CPUSet{}, err
	}
	counts := map[unix.CPUSet]int{}
	var best unix.CPUSet
	for _, tid := range tids {
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue
		}
		counts[set]++
		if counts[set] > counts[best] {
			best = set
		}
	}
	if len(counts) == 0 {
		return best, fmt.Errorf("no thread's affinity could be read")
	}
	return best, nil
}

// KeepProcessOff moves every thread of this process off cpu, but those
// with an affinity of their own (a probe thread pinned to one CPU), for the
// rest of the process's life: threads it creates later inherit the
// narrowed affinity. Its children do too, which is why tlab's own process
// is not kept off the emulator's CPU while a testbed runs, only helper
// processes such as the host-noise probe (docs/methodology.md, "The
// loop's CPU").
func KeepProcessOff(cpu int) error {
	if cpu < 0 {
		return nil
	}
	orig, err := commonAffinity()
	if err != nil {
		return fmt.Errorf("process affinity: %w", err)
	}
	off := orig
	off.Clear(cpu)
	if off.Count() == 0 {
		return nil // nowhere else to go
	}
	if err := MoveThreads(orig, off, 0); err != nil {
		return fmt.Errorf("keeping threads off CPU %d: %w", cpu, err)
	}
	return nil
}
