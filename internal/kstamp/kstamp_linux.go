// Package kstamp reads UDP datagrams with the kernel's receive time
// (SO_TIMESTAMPNS) rather than the time a reader got round to them: the
// agent's prober and the frame servers measure one-way delays and rates
// with it, which a busy host's late reads would otherwise inflate or
// compress.
package kstamp

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a UDP socket whose reads carry the kernel's receive
// time (SO_TIMESTAMPNS) instead of the time the reader got round to the
// packet. The prober's delays and train rates need the former: on a busy
// host the reading goroutine can wait tens of milliseconds and then read
// a whole train at once, which a read-time stamp turns into a train
// thousands of times faster than the path.
type Conn struct {
	*net.UDPConn
	oob []byte
}

// Stamp asks the kernel to timestamp c's received packets, and waits
// (at most a second) until the kernel stamps them on arrival.
func Stamp(c *net.UDPConn) (*Conn, error) {
	sc, err := stampSocket(c)
	if err != nil {
		return nil, err
	}
	awaitArrivalStamps(time.Second)
	return sc, nil
}

// stampSocket sets SO_TIMESTAMPNS on c, and IP_RECVTOS where it can (a
// read then also says the packet's ECN field).
func stampSocket(c *net.UDPConn) (*Conn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("kernel receive timestamps: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		// Best effort: an IPv6 socket has no IPv4 TOS to report.
		unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	}); err != nil {
		return nil, fmt.Errorf("kernel receive timestamps: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("kernel receive timestamps (SO_TIMESTAMPNS): %w", serr)
	}
	return &Conn{UDPConn: c, oob: make([]byte, unix.CmsgSpace(16)+unix.CmsgSpace(4))}, nil
}

// awaitArrivalStamps waits until the kernel stamps packets as they
// arrive, at most limit. When the first socket on a host asks for
// timestamps, the kernel turns them on in deferred work; a packet that
// arrives before that is stamped when it is read ("Race occurred between
// timestamp enabling and packet receiving. Fill in the current time for
// now", net/socket.c), which is the read-time stamp Conn exists to
// avoid. A clean-clone CI run met it: a probe sent right after Stamp and
// read 200 ms later carried the read's time.
//
// It sends itself one byte on loopback until one comes back stamped before
// the read began. Best effort: where loopback is down (a fresh network
// namespace) it gives up at once or after one 100 ms wait, and the first
// packets may then carry read times.
func awaitArrivalStamps(limit time.Duration) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return
	}
	defer rx.Close()
	sc, err := stampSocket(rx)
	if err != nil {
		return
	}
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return
	}
	defer tx.Close()
	buf := make([]byte, 1)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if _, err := tx.Write(buf); err != nil {
			return
		}
		// A stamp taken on arrival is then at least this much older
		// than the read.
		time.Sleep(time.Millisecond)
		readStart := time.Now().UnixNano()
		if err := rx.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			return
		}
		// A packet the kernel stamped at the read (or not at all) reads
		// no earlier than readStart.
		_, _, ns, err := sc.ReadStamped(buf)
		if err != nil || ns < readStart {
			return
		}
	}
}

// ReadStamped reads one datagram into b and returns its length, sender
// and receive time in Unix nanoseconds (CLOCK_REALTIME, time.Now's
// clock). A packet the kernel did not stamp gets the read's time. Not
// safe for concurrent reads.
func (c *Conn) ReadStamped(b []byte) (int, *net.UDPAddr, int64, error) {
	n, from, ns, _, err := c.ReadStampedECN(b)
	return n, from, ns, err
}

// ReadStampedECN is ReadStamped that also returns the packet's ECN field
// (the IP header's two low TOS bits: 3 is CE, congestion experienced; 0
// where the kernel did not say).
func (c *Conn) ReadStampedECN(b []byte) (int, *net.UDPAddr, int64, byte, error) {
	n, oobn, _, from, err := c.ReadMsgUDP(b, c.oob)
	if err != nil {
		return 0, nil, 0, 0, err
	}
	ns, ok := receiveTime(c.oob[:oobn])
	if !ok {
		ns = time.Now().UnixNano()
	}
	return n, from, ns, receiveECN(c.oob[:oobn]), nil
}

// WriteECN sends b to addr (nil on a connected socket) with the ECN field
// ecn (ECT(0) is 2): the IP_TOS control message sets it for this datagram
// alone.
func (c *Conn) WriteECN(b []byte, addr *net.UDPAddr, ecn byte) error {
	oob := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], uint32(ecn&3))
	_, _, err := c.WriteMsgUDP(b, oob, addr)
	return err
}

// receiveECN finds the IP_TOS control message among oob's and returns
// its ECN bits.
func receiveECN(oob []byte) byte {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1 {
			return m.Data[0] & 3
		}
	}
	return 0
}

// receiveTime finds the SCM_TIMESTAMPNS control message (a struct
// timespec) among oob's.
func receiveTime(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS || len(m.Data) < 16 {
			continue
		}
		sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
		nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
		if sec == 0 && nsec == 0 {
			return 0, false
		}
		return sec*1e9 + nsec, true
	}
	return 0, false
}
