//go:build linux

package emu

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/sysx"
)

// batch is how many frames one recvmmsg or sendmmsg call moves at most.
const batch = 64

// rctlSize holds one control message with a struct timespec:
// CMSG_SPACE(16) on 64-bit Linux.
const rctlSize = 32

// kernelTimestamp reads the SCM_TIMESTAMPNS control message of a received
// frame (nanoseconds on CLOCK_REALTIME), without allocating.
func kernelTimestamp(h *unix.Msghdr, ctl *[rctlSize]byte) (int64, bool) {
	if h.Controllen < rctlSize {
		return 0, false
	}
	level := int32(binary.NativeEndian.Uint32(ctl[8:12]))
	typ := int32(binary.NativeEndian.Uint32(ctl[12:16]))
	if level != unix.SOL_SOCKET || typ != unix.SCM_TIMESTAMPNS {
		return 0, false
	}
	sec := int64(binary.NativeEndian.Uint64(ctl[16:24]))
	nsec := int64(binary.NativeEndian.Uint64(ctl[24:32]))
	if sec == 0 && nsec == 0 {
		return 0, false
	}
	return sec*1e9 + nsec, true
}

type port struct {
	fd   int
	link int
	side int
	mac  [6]byte
	// ring is the port's receive ring with EngineRing, nil with
	// EngineMmsg.
	ring *rxRing
	// The send batch being assembled.
	msgs   []unix.Mmsghdr
	iovs   []unix.Iovec
	queued []pending
}

type linkState struct {
	dirs  [2]*Direction // up (from side A), down (from side B)
	ports [2][]int      // port indices on each side
}

// held is a frame a direction holds in its queue: the engine's buffer,
// named to the direction by its index in engine.held.
type held struct {
	buf  []byte
	n    int
	link int32
	side int8
}

type engine struct {
	spec  EngineSpec
	start time.Time
	links []*linkState
	ports []*port
	line  *releaseQueue
	// held are the frames the directions' queues hold, by Ref; freeRefs
	// the unused indices. emit is the directions' callback.
	held     []held
	freeRefs []int32
	emit     Emit
	free     [][]byte
	bufSize  int
	lateness *Histogram
	fwd      uint64
	wakeups  uint64
	epfd     int
	// busyNs, received and kernelDrops are the loop's account of
	// itself (LoopStats).
	busyNs      int64
	received    uint64
	kernelDrops uint64

	rmsgs []unix.Mmsghdr
	riovs []unix.Iovec
	rbufs [][]byte
	// rctl holds each received frame's control message: its kernel
	// receive timestamp; kernelTime says whether it is the arrival time.
	rctl       [][rctlSize]byte
	kernelTime bool
	readLag    *Histogram

	ctrl     []byte
	ctrlFD   int
	outFD    int
	stopping bool
	// useRing: frames come from the ports' receive rings (EngineRing).
	useRing bool
	// wake is the host's wake-up latency as the adaptive loop measures
	// it (ModeAdaptive only, nil otherwise).
	wake *wakeEstimate
	// linger: some link may release a frame sooner after it arrived than
	// a wake-up takes (releasesSoonerThanSpin), so the adaptive loop spins for a
	// wake-up latency after it moved a frame.
	linger bool
	// deferReads: the adaptive loop on receive rings may leave arrivals
	// unread while frames wait (readDeadline); ctrlEpfd is then the epoll
	// set it blocks on, the control pipe alone, and lastRead when it last
	// found every ring empty.
	deferReads bool
	ctrlEpfd   int
	lastRead   int64
}

func newEngine(spec EngineSpec, ctrlFD, outFD, firstPortFD int) (*engine, error) {
	if spec.MTU == 0 {
		spec.MTU = 1500
	}
	if spec.Mode == "" {
		spec.Mode = ModeAdaptive
	}
	e := &engine{
		spec:     spec,
		start:    time.Now(),
		bufSize:  spec.MTU + 64,
		lateness: NewHistogram(),
		ctrlFD:   ctrlFD,
		outFD:    outFD,
		rmsgs:    make([]unix.Mmsghdr, batch),
		riovs:    make([]unix.Iovec, batch),
		rbufs:    make([][]byte, batch),
		rctl:     make([][rctlSize]byte, batch),
		readLag:  NewHistogram(),
	}
	e.emit = e.verdict
	e.useRing = spec.Engine != EngineMmsg
	e.line = newReleaseQueue(2*len(spec.Links), !e.useRing)
	switch spec.Arrival {
	case "", ArrivalKernel:
		e.kernelTime = true
	case ArrivalRead:
	default:
		return nil, fmt.Errorf("arrival %q: want %s or %s", spec.Arrival, ArrivalKernel, ArrivalRead)
	}
	fd := firstPortFD
	for li, ls := range spec.Links {
		st := &linkState{}
		var err error
		if st.dirs[0], st.dirs[1], err = NewLink(ls.Config, spec.Seed, ls.Name, ls.TraceUp, ls.TraceDown); err != nil {
			return nil, err
		}
		e.linger = e.linger || releasesSoonerThanSpin(ls.Config.Up) || releasesSoonerThanSpin(ls.Config.Down)
		for _, ps := range ls.Ports {
			p := &port{fd: fd, link: li, side: ps.Side, msgs: make([]unix.Mmsghdr, batch), iovs: make([]unix.Iovec, batch)}
			copy(p.mac[:], ps.HostMAC)
			// Timestamps are asked for in both arrival modes: with
			// ArrivalRead they measure the error that mode makes.
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil && e.kernelTime {
				return nil, fmt.Errorf("kernel receive timestamps (SO_TIMESTAMPNS) on port %d: %w", fd, err)
			}
			if e.useRing {
				// Frames queued on the socket before the ring was set
				// up stay readable with recvmmsg; the loop drains them
				// first (drainQueued).
				if p.ring, err = newRxRing(fd, spec.MTU); err != nil {
					return nil, fmt.Errorf("port %d: %w", fd, err)
				}
			}
			st.ports[ps.Side] = append(st.ports[ps.Side], len(e.ports))
			e.ports = append(e.ports, p)
			fd++
		}
		e.links = append(e.links, st)
	}
	var err error
	if e.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	for i, p := range e.ports {
		if err := unix.SetNonblock(p.fd, true); err != nil {
			return nil, fmt.Errorf("port %d: %w", i, err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, p.fd, &ev); err != nil {
			return nil, fmt.Errorf("port %d: epoll: %w", i, err)
		}
	}
	if spec.DeferReads && spec.Mode == ModeAdaptive && e.useRing && onePortASide(e.links) {
		// With several hosts on a side, frames read one port after the
		// other are offered in read order (Direction.Offer): deferred,
		// that order could hold a frame back by the deferral.
		if e.ctrlEpfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
			return nil, fmt.Errorf("epoll: %w", err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
		if err := unix.EpollCtl(e.ctrlEpfd, unix.EPOLL_CTL_ADD, ctrlFD, &ev); err != nil {
			return nil, fmt.Errorf("control: epoll: %w", err)
		}
		e.deferReads = true
	}
	if spec.Mode == ModeAdaptive {
		samples, err := measureWakeLatency(wakeProbes)
		if err != nil {
			return nil, fmt.Errorf("measuring the wake-up latency: %w", err)
		}
		e.wake = newWakeEstimate(samples)
	}
	if err := unix.SetNonblock(ctrlFD, true); err != nil {
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(e.epfd, unix.EPOLL_CTL_ADD, ctrlFD, &ev); err != nil {
		return nil, fmt.Errorf("control: epoll: %w", err)
	}
	return e, nil
}

func (e *engine) now() int64 { return int64(time.Since(e.start)) }

// onePortASide says whether every side of every link has at most one port.
func onePortASide(links []*linkState) bool {
	for _, ls := range links {
		if len(ls.ports[0]) > 1 || len(ls.ports[1]) > 1 {
			return false
		}
	}
	return true
}

// readHold is the least time any frame arriving now stays in the
// emulator, over every direction (readHoldNs), asked afresh each round.
func (e *engine) readHold() int64 {
	hold := int64(math.MaxInt64)
	for _, ls := range e.links {
		for _, d := range ls.dirs {
			hold = min(hold, readHoldNs(d))
		}
	}
	return hold
}

// readRings reads a batch from every ring that holds a frame, and says
// whether any still holds one after.
func (e *engine) readRings() bool {
	e.pollRings()
	for _, p := range e.ports {
		if p.ring.ready() {
			return true
		}
	}
	return false
}

func (e *engine) getBuf() []byte {
	if n := len(e.free); n > 0 {
		b := e.free[n-1]
		e.free = e.free[:n-1]
		return b
	}
	return make([]byte, e.bufSize)
}

func (e *engine) putBuf(b []byte) { e.free = append(e.free, b[:cap(b)]) }

// controlEveryNs is how often a busy loop on receive rings asks epoll
// whether the parent wrote: it finds frames in the rings without a system
// call, and a request can wait a millisecond.
const controlEveryNs = int64(time.Millisecond)

// run is the event loop. It returns when the parent asks it to stop or
// closes the control pipe.
func (e *engine) run() error {
	if e.useRing {
		e.drainQueued()
	}
	events := make([]unix.EpollEvent, len(e.ports)+1)
	// A round that moved a frame is busy from its start to the next
	// round's start, read from the clock the round reads anyway.
	// A blocking wait's time is not: blocked is the part of the round
	// spent in one.
	var roundStart, lastPoll, blocked int64
	busy := false
	// lastMoved is when a round last moved a frame: the adaptive loop
	// keeps spinning for a wake-up latency after it.
	lastMoved := int64(math.MinInt64 / 2)
	for !e.stopping {
		now := e.now()
		if busy {
			e.busyNs += now - roundStart - blocked
		}
		roundStart, blocked = now, 0
		moved := e.fwd + e.received
		// Where reads are deferred, every ring is read a batch a round,
		// and found empty after it, nothing unread came before now. The
		// frames due go first: those read now can be due only if the
		// loop woke later than the hold allowed, and a frame released
		// on time should not wait behind a batch of reads.
		var hold int64
		if e.deferReads {
			hold = e.readHold()
			if hold >= minReadHoldNs {
				e.release(now)
				if !e.readRings() {
					e.lastRead = now
				}
			}
		}
		next := e.transmit(now)
		e.release(now)
		due := next
		release, waiting := e.line.next()
		if waiting {
			due = min(due, release)
		}
		epfd := e.epfd
		if e.deferReads {
			switch rd := readDeadline(e.lastRead, hold, waiting || next != math.MaxInt64); rd {
			case math.MinInt64, math.MaxInt64:
				// Read each frame as it comes: the hold is too short,
				// or nothing waits and the next arrival is the next
				// event.
			default:
				due = min(due, rd)
				epfd = e.ctrlEpfd
			}
		}
		timeout := loopWait(e.spec.Mode, now, due, lastMoved, e.spinNs(), e.linger)
		if e.useRing && timeout == 0 {
			// Spinning: the rings are read directly, and epoll is
			// asked only now and then, for the parent's requests.
			if e.pollRings() {
				e.wakeups++
			}
			if now-lastPoll < controlEveryNs {
				busy = e.fwd+e.received != moved
				if busy {
					lastMoved = now
				}
				continue
			}
		}
		lastPoll = now
		var waitStart int64
		if timeout != 0 {
			waitStart = e.now()
		}
		n, err := sysx.EpollPwait2(epfd, events, timeout)
		if timeout != 0 {
			woke := e.now()
			blocked = woke - waitStart
			if n == 0 && timeout > 0 && e.wake != nil {
				// A timed wait that ran out: how late it returned
				// is a sample of this host's wake-up latency.
				e.wake.add(woke - (now + timeout))
			}
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("epoll_pwait2: %w", err)
		}
		if n > 0 && !(e.useRing && timeout == 0) {
			e.wakeups++
		}
		for _, ev := range events[:n] {
			if ev.Fd < 0 {
				if err := e.control(); err != nil {
					return err
				}
				continue
			}
			e.receive(int(ev.Fd))
		}
		busy = e.fwd+e.received != moved
		if busy {
			lastMoved = now
		}
	}
	return nil
}

// spinNs is how long before a release the loop starts to spin: the
// measured wake-up latency in ModeAdaptive, the configured spin in
// ModeSleep.
func (e *engine) spinNs() int64 {
	if e.wake != nil {
		return e.wake.spinNs
	}
	return e.spec.SpinNs
}

// wakeProbes are the timed waits measureWakeLatency takes at start: 20 µs,
// 100 µs and 500 µs in turn (the longer a CPU idles, the deeper it may
// sleep and the later it wakes), about 31 ms in all: every testbed pays it
// at its start, and the loop's own timed waits refine it as it runs. The
// p99 of 150 is the second largest.
var wakeProbes = func() []int64 {
	var w []int64
	for i := 0; i < 150; i++ {
		w = append(w, []int64{20_000, 100_000, 500_000}[i%3])
	}
	return w
}()

// measureWakeLatency measures how late this thread returns from timed waits
// in epoll_pwait2 (the wait the loop blocks in), on an epoll set with
// nothing in it, one wait per duration given: the lateness of each, in ns.
// Called once the thread has its CPU and timer slack (prepareThread).
func measureWakeLatency(waits []int64) ([]int64, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(epfd)
	events := make([]unix.EpollEvent, 1)
	late := make([]int64, 0, len(waits))
	for _, w := range waits {
		start := time.Now()
		if _, err := sysx.EpollPwait2(epfd, events, w); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("epoll_pwait2: %w", err)
		}
		late = append(late, int64(time.Since(start))-w)
	}
	return late, nil
}

// pollRings reads every port's ring that holds a frame, and says whether
// one did. A spinning loop makes this pass over every port, idle or not,
// so its cost grows with the stations of a shared access
// (BenchmarkStations).
func (e *engine) pollRings() bool {
	got := false
	for pi, p := range e.ports {
		if p.ring.ready() {
			e.receiveRing(pi)
			got = true
		}
	}
	return got
}

// receive reads one batch of frames from a port and passes each to its
// direction. It takes one batch only, so that under a flood the loop still
// releases due frames and answers the parent between batches; epoll is
// level-triggered and reports the port again while frames wait.
func (e *engine) receive(pi int) {
	if e.useRing {
		e.receiveRing(pi)
		return
	}
	e.receiveMmsg(pi)
}

// drainQueued reads, with recvmmsg, the frames a port's socket queued
// before its ring was set up: the ring only receives what arrives after.
func (e *engine) drainQueued() {
	for pi := range e.ports {
		for e.receiveMmsg(pi) == batch {
		}
	}
}

// receiveMmsg reads one batch with recvmmsg and returns its size.
func (e *engine) receiveMmsg(pi int) int {
	p := e.ports[pi]
	for {
		for i := range e.rmsgs {
			if e.rbufs[i] == nil {
				e.rbufs[i] = e.getBuf()
			}
			e.riovs[i].Base = &e.rbufs[i][0]
			e.riovs[i].SetLen(e.bufSize)
			e.rmsgs[i].Hdr.Iov = &e.riovs[i]
			e.rmsgs[i].Hdr.SetIovlen(1)
			e.rmsgs[i].Len = 0
			e.rmsgs[i].Hdr.Control = &e.rctl[i][0]
			e.rmsgs[i].Hdr.SetControllen(rctlSize)
		}
		n, err := sysx.Recvmmsg(p.fd, e.rmsgs, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return 0 // EAGAIN: drained
		}
		e.received += uint64(n)
		clock := e.readClock()
		for i := 0; i < n; i++ {
			ts, stamped := kernelTimestamp(&e.rmsgs[i].Hdr, &e.rctl[i])
			size := int(e.rmsgs[i].Len)
			if size > e.bufSize {
				e.oversize(p, size)
				continue
			}
			buf := e.rbufs[i]
			e.rbufs[i] = nil
			e.accept(p, buf, size, e.arrival(&clock, ts, stamped))
		}
		return n
	}
}

// receiveRing reads up to one batch of frames from a port's ring.
func (e *engine) receiveRing(pi int) {
	p := e.ports[pi]
	clock := e.readClock()
	for n := 0; n < batch; n++ {
		frame, size, ts, truncated, ok := p.ring.next()
		if !ok {
			return
		}
		e.received++
		if truncated || size > e.bufSize {
			e.oversize(p, size)
			p.ring.done()
			continue
		}
		buf := e.getBuf()
		copy(buf, frame)
		p.ring.done()
		e.accept(p, buf, size, e.arrival(&clock, ts, ts != 0))
	}
}

// readClock reads the link clock. The kernel stamps frames on
// CLOCK_REALTIME; the link clock is monotonic. Their offset, read with
// both clocks at once, is taken afresh for every batch, so that a clock
// adjustment never accumulates.
func (e *engine) readClock() readClock {
	wall := time.Now()
	now := int64(wall.Sub(e.start))
	return readClock{now: now, offset: wall.UnixNano() - now}
}

// arrival is a frame's arrival on the link clock (readClock.arrival),
// with its read lag recorded.
func (e *engine) arrival(c *readClock, tsNs int64, stamped bool) int64 {
	at, lag := c.arrival(tsNs, stamped, e.kernelTime, e.readClock)
	if stamped {
		e.readLag.Add(lag)
	}
	return at
}

// oversize counts and drops a frame larger than the MTU (GRO left on
// somewhere): a truncated frame is never forwarded.
func (e *engine) oversize(p *port, size int) {
	dir := e.links[p.link].dirs[p.side]
	dir.Stats.RxPackets++
	dir.Stats.RxBytes += uint64(size)
	dir.CountTx(DropOversize, size)
}

// accept hands a frame read from port p, in pool buffer buf, to its
// direction.
func (e *engine) accept(p *port, buf []byte, size int, arrival int64) {
	flow, ecn := ParseFrame(buf[:size])
	ref := e.hold(held{buf: buf, n: size, link: int32(p.link), side: int8(p.side)})
	e.links[p.link].dirs[p.side].Offer(arrival, Frame{Size: size, Flow: flow, ECN: ecn, Ref: ref}, e.emit)
}

// hold keeps a frame while its direction's queue holds it.
func (e *engine) hold(h held) int32 {
	if n := len(e.freeRefs); n > 0 {
		ref := e.freeRefs[n-1]
		e.freeRefs = e.freeRefs[:n-1]
		e.held[ref] = h
		return ref
	}
	e.held = append(e.held, h)
	return int32(len(e.held) - 1)
}

// verdict carries out a direction's verdict on a held frame: into the
// delay line with its release (marked, corrupted, duplicated as told), or
// back to the pool.
func (e *engine) verdict(ref int32, v Verdict) {
	h := e.held[ref]
	e.held[ref] = held{}
	e.freeRefs = append(e.freeRefs, ref)
	if v.Drop != Delivered {
		e.putBuf(h.buf)
		return
	}
	buf := h.buf
	if v.Mark {
		MarkCE(buf[:h.n])
	}
	if v.CorruptBit >= 0 {
		buf[14+v.CorruptBit/8] ^= 1 << (v.CorruptBit % 8)
	}
	out := e.route(e.links[h.link], 1-int(h.side), buf)
	e.schedule(pending{release: v.Release, buf: buf, n: h.n, link: h.link, dir: h.side, out: int32(out)})
	if v.Duplicate {
		dup := e.getBuf()
		copy(dup, buf[:h.n])
		e.schedule(pending{release: v.Release, buf: dup, n: h.n, link: h.link, dir: h.side, out: int32(out)})
	}
}

// transmit starts every transmission due by now in every direction, and
// returns when the next one is due.
func (e *engine) transmit(now int64) int64 {
	next := int64(math.MaxInt64)
	for _, ls := range e.links {
		for _, d := range ls.dirs {
			if d.NextTransmit() <= now {
				d.Transmit(now, e.emit)
			}
			next = min(next, d.NextTransmit())
		}
	}
	return next
}

// schedule puts a frame in the delay line of its link's direction.
func (e *engine) schedule(p pending) {
	e.line.push(int(p.link)*2+int(p.dir), p)
}

// route picks the output port on side for a frame: the port whose host owns
// the destination MAC, the only port of the side, or -1 to flood.
func (e *engine) route(ls *linkState, side int, frame []byte) int {
	ports := ls.ports[side]
	if len(ports) == 1 {
		return ports[0]
	}
	if frame[0]&1 == 0 { // unicast
		for _, pi := range ports {
			if bytes.Equal(e.ports[pi].mac[:], frame[:6]) {
				return pi
			}
		}
	}
	return -1
}

// release sends every frame due by now, batched per output port.
func (e *engine) release(now int64) {
	released := false
	for {
		p, ok := e.line.popDue(now)
		if !ok {
			break
		}
		released = true
		if p.out >= 0 {
			e.enqueue(int(p.out), p)
			continue
		}
		ls := e.links[p.link]
		targets := ls.ports[1-int(p.dir)]
		for k, pi := range targets {
			c := p
			if k < len(targets)-1 {
				c.buf = e.getBuf()
				copy(c.buf, p.buf[:p.n])
			}
			e.enqueue(pi, c)
		}
	}
	if !released {
		return
	}
	for _, p := range e.ports {
		if len(p.queued) > 0 {
			e.flush(p)
		}
	}
}

func (e *engine) enqueue(pi int, p pending) {
	pt := e.ports[pi]
	pt.queued = append(pt.queued, p)
	if len(pt.queued) == batch {
		e.flush(pt)
	}
}

// flush hands a port's batch to the kernel and accounts for every frame.
func (e *engine) flush(p *port) {
	for i := range p.queued {
		p.iovs[i].Base = &p.queued[i].buf[0]
		p.iovs[i].SetLen(p.queued[i].n)
		p.msgs[i].Hdr.Iov = &p.iovs[i]
		p.msgs[i].Hdr.SetIovlen(1)
	}
	sendAt := e.now()
	msgs := p.msgs[:len(p.queued)]
	done := 0
	for done < len(msgs) {
		n, err := sysx.Sendmmsg(p.fd, msgs[done:], unix.MSG_DONTWAIT)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// The frame at done could not be sent (socket buffer
			// full): count it and go on with the rest.
			q := p.queued[done]
			e.links[q.link].dirs[q.dir].CountTx(DropTxError, q.n)
			done++
			continue
		}
		for _, q := range p.queued[done : done+n] {
			e.links[q.link].dirs[q.dir].CountTx(Delivered, q.n)
			e.lateness.Add(sendAt - q.release)
			e.fwd++
		}
		done += n
	}
	for i := range p.queued {
		e.putBuf(p.queued[i].buf)
		p.queued[i] = pending{}
	}
	p.queued = p.queued[:0]
}

// control reads and answers the parent's requests, one JSON object a line.
func (e *engine) control() error {
	var tmp [4096]byte
	for {
		n, err := unix.Read(e.ctrlFD, tmp[:])
		if n > 0 {
			e.ctrl = append(e.ctrl, tmp[:n]...)
		}
		if n == 0 && err == nil {
			e.stopping = true // parent closed the pipe
			break
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
	}
	for {
		req, rest, ok, err := nextRequest(e.ctrl)
		if err != nil || !ok {
			return err
		}
		e.ctrl = append(e.ctrl[:0], rest...)
		switch req.Op {
		case "set":
			if err := e.reply(e.set(req)); err != nil {
				return err
			}
		case "stats":
			if err := e.reply(e.stats()); err != nil {
				return err
			}
		case "reset_lateness":
			e.lateness.Reset()
			e.readLag.Reset()
			if err := e.reply(map[string]bool{"ok": true}); err != nil {
				return err
			}
		case "stop":
			e.stopping = true
			return nil
		}
	}
}

// set applies a live change to a link's direction now, on the link
// clock (live.go).
func (e *engine) set(req control) SetReply {
	now := e.now()
	for i, ls := range e.links {
		if e.spec.Links[i].Name != req.Link {
			continue
		}
		d := ls.dirs[0]
		if req.Direction == "down" {
			d = ls.dirs[1]
		}
		if err := d.Set(now, *req.Step); err != nil {
			return SetReply{AtNs: now, Error: fmt.Sprintf("%s/%s: %v", req.Link, req.Direction, err)}
		}
		return SetReply{AtNs: now, State: d.timeline.At(time.Duration(now) + req.Step.Ramp.D())}
	}
	return SetReply{AtNs: now, Error: fmt.Sprintf("no link %q", req.Link)}
}

func (e *engine) stats() EngineStats {
	s := EngineStats{Lateness: e.lateness.Summary(), ReadLag: e.readLag.Summary(), Forwarded: e.fwd, Wakeups: e.wakeups, ClockNs: e.now()}
	if e.spec.Mode != ModeBusy {
		s.SpinNs = e.spinNs()
	}
	for _, p := range e.ports {
		// Reading the kernel's counters resets them: they are added up.
		if st, err := unix.GetsockoptTpacketStats(p.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			e.kernelDrops += uint64(st.Drops)
		}
	}
	s.Loop = LoopStats{BusyNs: e.busyNs, Received: e.received, KernelDrops: e.kernelDrops}
	// The loop answers requests itself, so this thread is the loop's.
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err == nil {
		s.Loop.VoluntarySwitches, s.Loop.InvoluntarySwitches = uint64(ru.Nvcsw), uint64(ru.Nivcsw)
	}
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err == nil {
		s.Loop.CPUNs = ru.Utime.Nano() + ru.Stime.Nano()
	}
	for i, ls := range e.links {
		s.Links = append(s.Links, LinkStats{Name: e.spec.Links[i].Name, Up: ls.dirs[0].Stats, Down: ls.dirs[1].Stats})
	}
	return s
}

func (e *engine) reply(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	for len(b) > 0 {
		n, err := unix.Write(e.outFD, b)
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			return fmt.Errorf("control reply: %w", err)
		}
		b = b[n:]
	}
	return nil
}

// prepareThread prepares the engine's process for its loop: the finest
// timer slack, the loop's CPU and, when configured, real-time scheduling.
//
// The Go runtime preempts a goroutine that runs for 10 ms, and the loop
// always runs. A goroutine locked to its thread (LockOSThread) that is
// preempted parks its thread and is handed back by another thread: two
// wake-ups across CPUs, which on a busy VM cost from tens of microseconds
// to milliseconds, in the middle of the loop. So the engine runs with one
// P and its goroutine unlocked, with every thread of the process on the
// loop's CPU: a preempted loop is picked up again at once by its own
// thread, since nothing else wants the P. The runtime's other threads
// (sysmon) wake there briefly. The collector is off below a memory limit:
// the loop allocates almost nothing, and a collection would take the one P.
//
// Real-time scheduling is a property of a thread, so with it the loop is
// locked to its thread after all, and pays for the hand-back.
//
// Two Ps were measured (2026-11-28, docs/methodology.md) and not kept:
// with an idle P the runtime's monitor leaves the loop's blocking waits
// alone, halving the system calls (12.2 to 6.4 a frame at 10 Mbit/s) and
// context switches, and the CPU per Gbit fell 2.8 s at 10 Mbit/s and
// 0.5 s at 100; but the loop then ran on two threads in turn, and the
// forwarding capacity fell in every block (1400-byte frames 340k to 194k
// a second, medians). Two Ps with the loop locked to its thread kept the
// halved system calls, but its CPU saving was not separable, 1400-byte
// forwarding was lower in four of six blocks and one window stalled (16k
// frames a second): not kept either.
func prepareThread(spec EngineSpec) error {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(engineMemoryLimit)
	// Threads inherit the timer slack and the affinity of the thread that
	// creates them: set on the main thread early, both reach the threads
	// the runtime starts later.
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("timer slack: %w", err)
	}
	if spec.RealtimePriority > 0 {
		return prepareRealtimeThread(spec)
	}
	if spec.CPU >= 0 {
		var orig, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &orig); err != nil {
			return fmt.Errorf("affinity: %w", err)
		}
		set.Set(spec.CPU)
		// Every thread with the calling thread's affinity, the calling
		// thread too.
		if err := sysx.MoveThreads(orig, set, 0); err != nil {
			return fmt.Errorf("pinning the engine to CPU %d: %w", spec.CPU, err)
		}
	}
	return nil
}

// prepareRealtimeThread puts the loop's thread alone under SCHED_FIFO, and
// alone on the loop's CPU. The runtime's other threads stay at normal
// priority where they were: a real-time thread that waits for one of them
// on its own CPU waits forever. Measured (docs/methodology.md), with every
// thread on the loop's CPU the loop spun in runtime.casgstatus (procyield,
// sched_yield: which yields to no thread of lower priority) for the
// 950 ms of the kernel's real-time budget (sched_rt_runtime_us) in most
// windows, until the throttle let the thread it waited for run.
//
// The loop is locked to its thread first: that starts the runtime's
// template thread, which starts every later thread, from this one while
// it still has its old affinity and policy; reset-on-fork keeps threads
// this one starts itself off SCHED_FIFO.
func prepareRealtimeThread(spec EngineSpec) error {
	runtime.LockOSThread()
	if spec.CPU >= 0 {
		var set unix.CPUSet
		set.Set(spec.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pinning the engine's loop to CPU %d: %w", spec.CPU, err)
		}
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Flags: unix.SCHED_FLAG_RESET_ON_FORK, Priority: uint32(spec.RealtimePriority)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("SCHED_FIFO priority %d: %w", spec.RealtimePriority, err)
	}
	return nil
}

// engineMemoryLimit is the heap at which the engine's collector runs after
// all: far above what it holds (its frame pool, a few megabytes).
const engineMemoryLimit = 512 << 20

// childEnv marks a process started as the emulator engine.
const childEnv = "TLAB_EMULATOR_ENGINE"

// RunChildIfRequested runs the engine and exits when this process was
// started as one. Every binary that starts emulators (the tlab command and
// the test binaries of packages that build testbeds) calls it first thing.
func RunChildIfRequested() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	if err := childMain(); err != nil {
		fmt.Fprintf(os.Stderr, "tlab emulator: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func childMain() error {
	// The parent tears the emulator down; Ctrl-C on the terminal must not
	// kill it first.
	ignoreInterrupt()
	specLine, rest, err := readLine(0)
	if err != nil {
		return fmt.Errorf("reading spec: %w", err)
	}
	var spec EngineSpec
	if err := json.Unmarshal(specLine, &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := prepareThread(spec); err != nil {
		return err
	}
	e, err := newEngine(spec, 0, 1, 3)
	if err != nil {
		return err
	}
	e.ctrl = rest
	if err := e.reply(map[string]any{"ready": true, "pid": os.Getpid()}); err != nil {
		return err
	}
	return e.run()
}

// readLine reads fd up to the first newline with plain blocking reads, so
// that nothing after the line is lost to a buffered reader.
func readLine(fd int) (line, rest []byte, err error) {
	var buf []byte
	var tmp [4096]byte
	for {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return buf[:i], append([]byte(nil), buf[i+1:]...), nil
		}
		n, err := unix.Read(fd, tmp[:])
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, nil, err
		}
		if n == 0 {
			return nil, nil, errors.New("control pipe closed before the spec arrived")
		}
		buf = append(buf, tmp[:n]...)
	}
}
