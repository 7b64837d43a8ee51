package frames

import (
	"net"

	"golang.org/x/sys/unix"
)

// frameReadBuffer is the receive buffer of a frame server's datagram
// socket. Linux's default (net.core.rmem_default, 212992 B, charged at
// each datagram's kernel size, about 2.3 kB for a 1.4 kB payload) holds
// some 90 datagrams, fewer than one 151.2 kB frame's 108 (study E's
// largest): a server whose reader is held up while a frame arrives (a
// shared host's scheduling, tens of milliseconds on a busy one) lost
// datagrams in the socket, not on the link. 4 MiB holds about 1800, half
// a second of 151.2 kB frames at 30 Hz.
const frameReadBuffer = 4 << 20

// growReadBuffer gives c frameReadBuffer, beyond net.core.rmem_max where
// the process may (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which tlab's runs
// have), else as far as rmem_max allows.
func growReadBuffer(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, frameReadBuffer)
	}); err != nil {
		return err
	}
	if serr != nil {
		return c.SetReadBuffer(frameReadBuffer)
	}
	return nil
}
