package testbed

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolIoctl issues SIOCETHTOOL with ifr_data pointing at value.
func ethtoolIoctl(fd int, ifr *unix.Ifreq, value *struct{ cmd, data uint32 }) error {
	// struct ifreq is the 16-byte name followed by a union whose first
	// member here is the pointer ifr_data.
	var raw [40]byte
	name := ifr.Name()
	copy(raw[:unix.IFNAMSIZ-1], name)
	*(*uintptr)(unsafe.Pointer(&raw[unix.IFNAMSIZ])) = uintptr(unsafe.Pointer(value))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&raw[0])))
	runtime.KeepAlive(value)
	if errno != 0 {
		return errno
	}
	return nil
}
