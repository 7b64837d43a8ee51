package remote

import (
	"net"

	"tlab/internal/kstamp"
)

// StampedConn is a UDP socket whose reads carry the kernel's receive time
// (kstamp.Conn): the prober's delays and train rates need the arrival,
// not the moment a busy host's reader got to the packet.
type StampedConn = kstamp.Conn

// Stamp asks the kernel to timestamp c's received packets (kstamp.Stamp).
func Stamp(c *net.UDPConn) (*StampedConn, error) { return kstamp.Stamp(c) }
