package frames

import (
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"tlab/internal/proto"
)

// TestFrameServersHoldAFrameBurst: a frame server's datagram socket can
// hold several of study E's largest frames. Linux reports SO_RCVBUF as
// twice what was set (socket(7): the kernel doubles it for bookkeeping);
// the default, 212992 B set, reads 425984, under one 151.2 kB frame's 108
// datagrams at about 2.3 kB each (250 kB) plus the next frame's. Root
// (CAP_NET_ADMIN) gets the whole 4 MiB whatever net.core.rmem_max says.
func TestFrameServersHoldAFrameBurst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SO_RCVBUFFORCE needs CAP_NET_ADMIN")
	}
	c, err := proto.LocalNet{}.ListenUDP(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := growReadBuffer(c); err != nil {
		t.Fatal(err)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	if got < 2*4<<20 {
		t.Errorf("SO_RCVBUF %d B, want 2 x 4 MiB = %d (room for about 1800 datagrams of 1.4 kB)", got, 2*4<<20)
	}
}
