// Package sysx wraps the Linux system calls that golang.org/x/sys/unix does
// not: batched datagram I/O and epoll with a nanosecond timeout.
package sysx

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollPwait2 waits for events with a nanosecond timeout; a negative
// timeout waits forever, zero polls.
func EpollPwait2(epfd int, events []unix.EpollEvent, timeoutNs int64) (int, error) {
	var tsp uintptr
	var ts unix.Timespec
	if timeoutNs >= 0 {
		ts = unix.NsecToTimespec(timeoutNs)
		tsp = uintptr(unsafe.Pointer(&ts))
	}
	n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), tsp, 0, 0)
	runtime.KeepAlive(&ts)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Recvmmsg receives up to len(msgs) datagrams or frames in one call.
func Recvmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Sendmmsg sends up to len(msgs) datagrams or frames in one call.
func Sendmmsg(fd int, msgs []unix.Mmsghdr, flags int) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
