package calibrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/sysx"
	"tlab/internal/testbed"
)

// The probes use raw blocking sockets on dedicated OS threads rather than
// Go's netpoller: the instrument must measure the emulator, not the wake-up
// path of the Go scheduler.

// udpSocket opens a UDP socket in the calling thread's namespace, bound to
// port (0 for any) and with a receive timeout.
func udpSocket(port int, timeout time.Duration) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// connectedUDP opens a UDP socket in the calling thread's namespace,
// connected to ip:port, with a one-second receive timeout.
func connectedUDP(ip net.IP, port int) (int, error) {
	fd, err := udpSocket(0, time.Second)
	if err != nil {
		return -1, err
	}
	to := &unix.SockaddrInet4{Port: port}
	copy(to.Addr[:], ip.To4())
	if err := unix.Connect(fd, to); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// echoServer answers every datagram on port in host until stop is set. It
// returns once the socket is ready.
func echoServer(h *testbed.Host, port int, stop *atomic.Bool) (done <-chan error, err error) {
	ready := make(chan error, 1)
	finished := make(chan error, 1)
	go func() {
		finished <- h.Do(func() error {
			fd, err := udpSocket(port, 50*time.Millisecond)
			ready <- err
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			buf := make([]byte, 2048)
			for !stop.Load() {
				n, from, err := unix.Recvfrom(fd, buf, 0)
				if err != nil {
					continue // timeout: look at stop again
				}
				unix.Sendto(fd, buf[:n], 0, from)
			}
			return nil
		})
	}()
	return finished, <-ready
}

// pingPong sends n 64-byte datagrams one at a time from client to an echo
// server on serverIP and returns each round-trip time. The first warm
// exchanges are not returned.
func pingPong(client, server *testbed.Host, serverIP net.IP, n, warm int) ([]time.Duration, error) {
	const port = 7001
	var stop atomic.Bool
	done, err := echoServer(server, port, &stop)
	if err != nil {
		return nil, fmt.Errorf("echo server: %w", err)
	}
	defer func() { stop.Store(true); <-done }()
	var rtts []time.Duration
	err = client.Do(func() error {
		fd, err := connectedUDP(serverIP, port)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		msg := make([]byte, 64)
		buf := make([]byte, 2048)
		rtts = make([]time.Duration, 0, n)
		for i := 0; i < n+warm; i++ {
			binary.LittleEndian.PutUint64(msg, uint64(i))
			t0 := time.Now()
			if _, err := retry(func() (int, error) { return unix.Write(fd, msg) }); err != nil {
				return err
			}
			for {
				m, err := retry(func() (int, error) { return unix.Read(fd, buf) })
				if err != nil {
					return fmt.Errorf("no echo for probe %d: %w", i, err)
				}
				if m >= 8 && binary.LittleEndian.Uint64(buf) == uint64(i) {
					break
				}
			}
			if i >= warm {
				rtts = append(rtts, time.Since(t0))
			}
		}
		return nil
	})
	return rtts, err
}

// setCongestion returns a socket control function that selects cc.
func setCongestion(cc string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		})
		return errors.Join(err, serr)
	}
}

// tcpGoodput sends bulk data from client to server for duration with
// congestion control cc and returns the goodput measured at the receiver
// after warmup, in bits per second.
func tcpGoodput(client, server *testbed.Host, serverIP net.IP, cc string, warmup, duration time.Duration) (float64, error) {
	const port = 7003
	lc := net.ListenConfig{Control: setCongestion(cc)}
	var ln net.Listener
	err := server.Do(func() (err error) {
		ln, err = lc.Listen(context.Background(), "tcp4", fmt.Sprintf(":%d", port))
		return
	})
	if err != nil {
		return 0, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	type result struct {
		bps float64
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		start := time.Now()
		var total, atWarm int64
		var tWarm, tLast time.Time
		for {
			n, err := c.Read(buf)
			now := time.Now()
			total += int64(n)
			if tWarm.IsZero() && now.Sub(start) >= warmup {
				tWarm, atWarm = now, total
			}
			if n > 0 {
				tLast = now
			}
			if err != nil {
				if err != io.EOF {
					res <- result{err: err}
					return
				}
				break
			}
		}
		if tWarm.IsZero() || !tLast.After(tWarm) {
			res <- result{err: errors.New("transfer too short to measure")}
			return
		}
		res <- result{bps: float64(total-atWarm) * 8 / tLast.Sub(tWarm).Seconds()}
	}()
	d := &net.Dialer{Control: setCongestion(cc)}
	c, err := client.DialContext(context.Background(), d, "tcp4", net.JoinHostPort(serverIP.String(), fmt.Sprint(port)))
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	chunk := make([]byte, 256<<10)
	end := time.Now().Add(warmup + duration)
	for time.Now().Before(end) {
		if _, err := c.Write(chunk); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	r := <-res
	return r.bps, r.err
}

// pinAwayFromEmulator keeps the calling thread (a load generator, which
// Host.Do discards afterwards) off the last CPU, where the testbed pins the
// emulator: a generator sharing its core would measure the scheduler.
func pinAwayFromEmulator() {
	if cpu := sysx.EmulatorCPU(); cpu >= 0 {
		set := sysx.AllBut(cpu)
		unix.SchedSetaffinity(0, &set)
	}
}

// retry repeats a system call interrupted by a signal: Go's scheduler
// preempts threads with SIGURG, which interrupts blocking calls.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// blackholeIP and blackholeMAC are a destination on the client-server link
// that no host owns (see testbed.Host.AddNeighbour).
var (
	blackholeIP  = net.IPv4(198, 18, 1, 250).To4()
	blackholeMAC = net.HardwareAddr{0x02, 0x74, 0x6c, 0xff, 0xff, 0xfe}
)

// withBlackhole runs send on a thread of the client's namespace with a UDP
// socket connected to the black hole: a destination on the link that no
// host owns.
func withBlackhole(client *testbed.Host, send func(fd int) error) error {
	if err := client.AddNeighbour(client.Ifaces[0].Name, blackholeIP, blackholeMAC); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("black hole: %w", err)
	}
	return client.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		to := &unix.SockaddrInet4{Port: 9}
		copy(to.Addr[:], blackholeIP)
		if err := unix.Connect(fd, to); err != nil {
			return err
		}
		return send(fd)
	})
}

// udpFlood sends payload-byte datagrams from the client's first interface
// towards the black hole as fast as one thread can for duration, or count
// datagrams if count > 0, and returns how many it handed to the kernel.
func udpFlood(client *testbed.Host, payload int, duration time.Duration, count int) (int, error) {
	sent := 0
	err := withBlackhole(client, func(fd int) error {
		pinAwayFromEmulator()
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
		const batch = 32
		msg := make([]byte, payload)
		iov := unix.Iovec{Base: &msg[0]}
		iov.SetLen(payload)
		msgs := make([]unix.Mmsghdr, batch)
		for i := range msgs {
			msgs[i].Hdr.Iov = &iov
			msgs[i].Hdr.SetIovlen(1)
		}
		var err error
		sent, err = sendBatches(fd, msgs, duration, count)
		return err
	})
	return sent, err
}

// sendBatches hands msgs to the kernel with sendmmsg again and again, for
// duration, or until count messages went if count > 0, and returns how
// many the kernel accepted. A full queue (ENOBUFS, EAGAIN) is retried at
// once: the flood is as fast as the kernel takes it.
func sendBatches(fd int, msgs []unix.Mmsghdr, duration time.Duration, count int) (int, error) {
	sent := 0
	end := time.Now().Add(duration)
	for (count > 0 && sent < count) || (count == 0 && time.Now().Before(end)) {
		k := len(msgs)
		if count > 0 {
			k = min(k, count-sent)
		}
		n, err := sysx.Sendmmsg(fd, msgs[:k], 0)
		if err != nil {
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return sent, err
		}
		sent += n
	}
	return sent, nil
}

// pacedFlood sends one 64-byte datagram to the black hole every interval
// for duration, as background load on the delay line.
func pacedFlood(client *testbed.Host, duration, interval time.Duration) error {
	return withBlackhole(client, func(fd int) error {
		msg := make([]byte, 64)
		base := time.Now()
		for next := time.Duration(0); next < duration; next += interval {
			if d := next - time.Since(base); d > 0 {
				time.Sleep(d)
			}
			unix.Write(fd, msg)
		}
		return nil
	})
}

// udpAtRate sends 1400-byte datagrams to the black hole at rate bits per
// second (counting whole Ethernet frames) for duration: an offered load
// above a limiter's rate, so that what the limiter lets through is its own
// rate, with no congestion control in the way.
func udpAtRate(client *testbed.Host, rate float64, duration time.Duration) error {
	const payload = 1400
	frameBits := float64(payload+42) * 8
	return withBlackhole(client, func(fd int) error {
		msg := make([]byte, payload)
		base := time.Now()
		sent := 0.0
		for time.Since(base) < duration {
			// Catch up to the schedule, then sleep a millisecond: bursts
			// of a millisecond's worth, which the limiter's queue takes.
			due := time.Since(base).Seconds() * rate / frameBits
			for ; sent < due; sent++ {
				unix.Write(fd, msg)
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
}

// rawFlood offers frames of payload UDP bytes to the client's first
// interface as fast as one thread can, for duration, through a packet
// socket that skips the kernel's UDP and IP stack and its queueing
// discipline (PACKET_QDISC_BYPASS), in batches of 256 per sendmmsg: a
// load generator the emulator can be measured against, where one UDP
// socket on this VM tops out near 0.3 million datagrams a second, below
// the engine. The frames are whole UDP/IPv4 datagrams to the black hole,
// with correct checksums, on 64 source ports so that flow-aware models
// see several flows. It returns how many frames the kernel accepted.
// With pps above 0 it offers that many frames a second instead, a batch at
// a time on schedule (sleeping between batches once ahead of it).
func rawFlood(client *testbed.Host, payload int, duration time.Duration, pps float64) (int, error) {
	iface := client.Ifaces[0]
	sent := 0
	err := client.Do(func() error {
		pinAwayFromEmulator()
		ifi, err := net.InterfaceByName(iface.Name)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // protocol 0: send only
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("binding to %s: %w", iface.Name, err)
		}
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
		const batch, flows = 256, 64
		frames := make([][]byte, flows)
		for i := range frames {
			frames[i] = udpFrame(ifi.HardwareAddr, blackholeMAC, iface.IP.To4(), blackholeIP, uint16(40000+i), 9, payload)
		}
		iovs := make([]unix.Iovec, batch)
		msgs := make([]unix.Mmsghdr, batch)
		for i := range msgs {
			f := frames[i%flows]
			iovs[i].Base = &f[0]
			iovs[i].SetLen(len(f))
			msgs[i].Hdr.Iov = &iovs[i]
			msgs[i].Hdr.SetIovlen(1)
		}
		if pps <= 0 {
			sent, err = sendBatches(fd, msgs, duration, 0)
			return err
		}
		sent, err = pacedBatches(fd, msgs, duration, pps)
		return err
	})
	return sent, err
}

// pacedBatches sends msgs a batch at a time so that, by any moment, about
// pps frames a second have gone, for duration, and returns how many the
// kernel accepted.
func pacedBatches(fd int, msgs []unix.Mmsghdr, duration time.Duration, pps float64) (int, error) {
	start, sent := time.Now(), 0
	for offered := 0; ; offered += len(msgs) {
		due := start.Add(time.Duration(float64(offered) / pps * float64(time.Second)))
		if due.Sub(start) >= duration {
			return sent, nil
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		n, err := sendBatches(fd, msgs, 0, len(msgs))
		sent += n
		if err != nil {
			return sent, err
		}
	}
}

// udpFrame builds an Ethernet frame holding a UDP/IPv4 datagram of payload
// zero bytes, with its IP and UDP checksums.
func udpFrame(src, dst net.HardwareAddr, srcIP, dstIP net.IP, srcPort, dstPort uint16, payload int) []byte {
	f := make([]byte, 14+20+8+payload)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:14], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[2:4], uint16(20+8+payload))
	copy(ip[12:16], srcIP.To4())
	copy(ip[16:20], dstIP.To4())
	binary.BigEndian.PutUint16(ip[10:12], internetChecksum(ip, 0))
	udp := f[34:]
	binary.BigEndian.PutUint16(udp[0:2], srcPort)
	binary.BigEndian.PutUint16(udp[2:4], dstPort)
	binary.BigEndian.PutUint16(udp[4:6], uint16(8+payload))
	// The pseudo-header: addresses, protocol, UDP length.
	var pseudo uint32
	for _, b := range [][]byte{ip[12:14], ip[14:16], ip[16:18], ip[18:20]} {
		pseudo += uint32(binary.BigEndian.Uint16(b))
	}
	pseudo += unix.IPPROTO_UDP + uint32(8+payload)
	sum := internetChecksum(udp, pseudo)
	if sum == 0 {
		sum = 0xffff // RFC 768: zero means "no checksum"
	}
	binary.BigEndian.PutUint16(udp[6:8], sum)
	return f
}

// internetChecksum is RFC 1071's sum of b's 16-bit words, started from
// initial, folded and complemented.
func internetChecksum(b []byte, initial uint32) uint16 {
	sum := initial
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
