package emu

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"tlab/internal/sysx"
)

// The loop's timed waits, and the Go runtime. A goroutine that enters a
// blocking system call the ordinary way (unix.Syscall) tells the runtime,
// whose monitor thread then takes its P away after 20 µs and wakes
// another thread to look for work; on return the loop's thread asks for a
// P back. With one P and one goroutine there is never other work, and
// each of the loop's waits, two a frame at 10 Mbit/s, cost the runtime's
// threads futex wake-ups, a sched_yield and the monitor's 20 µs naps:
// measured with strace -c over 5 s of 10 Mbit/s (4137 sendmmsg), 21 143
// futex, 15 295 nanosleep and 1266 sched_yield against 8208 epoll_pwait2,
// three quarters of the engine's system calls (docs/methodology.md).
//
// So the loop's short timed waits are raw system calls (waitsRaw, adaptive.go).

// loopWaitCall waits in epoll_pwait2 for at most timeoutNs (waitForever:
// no timeout), raw when the wait is short (rawWaitMaxNs).
func loopWaitCall(epfd int, events []unix.EpollEvent, timeoutNs int64) (int, error) {
	if !waitsRaw(timeoutNs) {
		return sysx.EpollPwait2(epfd, events, timeoutNs)
	}
	ts := unix.NsecToTimespec(timeoutNs)
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(unsafe.Pointer(&ts)), 0, 0)
	runtime.KeepAlive(&ts)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
