package kstamp

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timestampMessage builds the control message the kernel writes for
// SO_TIMESTAMPNS: a cmsghdr and a struct timespec.
func timestampMessage(level, typ int32, sec, nsec int64) []byte {
	b := make([]byte, unix.CmsgSpace(16))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(16))
	data := b[unix.CmsgLen(0):]
	binary.NativeEndian.PutUint64(data[0:], uint64(sec))
	binary.NativeEndian.PutUint64(data[8:], uint64(nsec))
	return b
}

// TestReceiveTimeReadsTheTimespec: the kernel's timespec is read as Unix
// nanoseconds; another control message, an empty or truncated buffer or
// a zero time is no time.
func TestReceiveTimeReadsTheTimespec(t *testing.T) {
	if ns, ok := receiveTime(timestampMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, 1764000000, 123456789)); !ok || ns != 1764000000123456789 {
		t.Errorf("got %d, %v; want 1764000000123456789", ns, ok)
	}
	full := timestampMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, 5, 6)
	for name, oob := range map[string][]byte{
		"none":        nil,
		"other type":  timestampMessage(unix.SOL_SOCKET, unix.SCM_RIGHTS, 5, 6),
		"other level": timestampMessage(unix.IPPROTO_IP, unix.SCM_TIMESTAMPNS, 5, 6),
		"zero time":   timestampMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, 0, 0),
		"truncated":   full[:unix.CmsgLen(8)],
	} {
		if ns, ok := receiveTime(oob); ok {
			t.Errorf("%s: read a time %d", name, ns)
		}
	}
}
