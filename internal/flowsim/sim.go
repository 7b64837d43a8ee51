package flowsim

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Config is one simulated transfer.
type Config struct {
	Name    string `json:"name"`
	Streams int    `json:"streams"`
	// BytesPerStream is what each stream carries.
	BytesPerStream int64 `json:"bytes_per_stream"`
	// Initial and upper windows of each stream and of the connection.
	StreamWindow int64 `json:"stream_window"`
	StreamUpper  int64 `json:"stream_upper"`
	ConnWindow   int64 `json:"conn_window"`
	ConnUpper    int64 `json:"conn_upper"`
	// The link: rate in bit/s, one-way delay, random loss of data packets.
	Rate   float64       `json:"rate_bps"`
	OneWay time.Duration `json:"one_way"`
	Loss   float64       `json:"loss"`
	// MSS is the stream payload per packet; Overhead the header bytes a
	// packet adds on the link (UDP, IP, QUIC short header, frame headers).
	MSS      int64 `json:"mss"`
	Overhead int64 `json:"overhead"`
	// Congestion enables a NewReno-like controller; without it only flow
	// control limits the sender. InitialCwnd is its initial window in
	// packets (10 when 0, as RFC 9002 recommends; quic-go uses 32).
	Congestion  bool `json:"congestion"`
	InitialCwnd int  `json:"initial_cwnd_packets,omitempty"`
	// ConsumeRate is how fast the application reads, bytes/s; 0 reads
	// everything as soon as it arrives in order.
	ConsumeRate float64 `json:"consume_rate"`
	Seed        uint64  `json:"seed"`
	// Sample is the time series' resolution.
	Sample time.Duration `json:"sample"`
}

// RTT is the link's round-trip propagation time.
func (c Config) RTT() time.Duration { return 2 * c.OneWay }

// Validate reports impossible settings.
func (c Config) Validate() error {
	switch {
	case c.Streams < 1:
		return errors.New("at least one stream")
	case c.BytesPerStream < 1:
		return errors.New("bytes per stream must be positive")
	case c.StreamWindow < 1 || c.StreamUpper < c.StreamWindow:
		return errors.New("stream window must be positive and at most its upper bound")
	case c.ConnWindow < 1 || c.ConnUpper < c.ConnWindow:
		return errors.New("connection window must be positive and at most its upper bound")
	case c.Rate <= 0:
		return errors.New("link rate must be positive")
	case c.Loss < 0 || c.Loss >= 1:
		return errors.New("loss must be in [0, 1)")
	case c.MSS < 1:
		return errors.New("MSS must be positive")
	}
	return nil
}

// Sample is one point of a run's time series.
type Sample struct {
	T               time.Duration `json:"t"`
	Received        []int64       `json:"received"` // per stream, consumed in order
	MaxStreamWindow int64         `json:"max_stream_window"`
	// StreamWindowSum is the sum of the streams' receive windows, what
	// study C plots as the window in its Figs. 7b-9b.
	StreamWindowSum int64 `json:"stream_window_sum"`
	ConnWindow      int64 `json:"conn_window"`
}

// Result summarises a run.
type Result struct {
	Allowance string `json:"allowance"`
	Scenario  string `json:"scenario"`
	// Source is "simulator", or the stack that was measured ("quic-go").
	Source         string  `json:"source"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	CompletionS    float64 `json:"completion_s"`
	WindowUpdates  int     `json:"window_updates"`
	MaxStreamWin   int64   `json:"max_stream_window_bytes"`
	MaxConnWin     int64   `json:"max_conn_window_bytes"`
	BlockedS       float64 `json:"flow_control_blocked_s"`
	BytesTotal     int64   `json:"bytes_total"`
	// Retransmits counts data packets lost on the link (and sent again).
	Retransmits int      `json:"retransmits"`
	Series      []Sample `json:"-"`
	// Updates are the window updates the receiver sent, in order: what
	// explains an allowance, update by update.
	Updates []Update `json:"-"`
}

// Update is one MAX_STREAM_DATA or MAX_DATA the receiver sent.
type Update struct {
	T time.Duration
	// Stream is the stream's index, or -1 for the connection.
	Stream int
	// Avail is W_avail when the allowance decided (advertised limit less
	// consumed); Size the window after the decision, Grew whether the
	// decision grew it; MaxOffset the limit advertised; Credit what the
	// update added to the previous limit.
	Avail, Size, MaxOffset, Credit int64
	Grew                           bool
}

type evKind uint8

const (
	evData evKind = iota
	evAck
	evUpdate
	evConsumed
	evLost
)

type event struct {
	at     time.Duration
	seq    uint64
	kind   evKind
	stream int // -1: connection
	off    int64
	n      int64
	sent   time.Duration // when a data packet left (for loss recovery)
}

type events []event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type sendStream struct {
	sent, limit int64
	retx        []event // lost chunks waiting to be sent again
}

type recvStream struct {
	win       Window
	delivered int64           // in-order bytes handed to the application
	pending   map[int64]int64 // out-of-order chunks: offset -> length
	consumed  int64
}

type sim struct {
	cfg  Config
	a    Allowance
	q    events
	seq  uint64
	now  time.Duration
	rng  *rand.Rand
	send []sendStream
	recv []recvStream
	conn Window // receiver's connection window
	// Sender's view of the connection limit and its use.
	connLimit, connSent int64
	linkBusy            time.Duration
	cwnd, ssthresh      float64
	recoveryStart       time.Duration
	inflight            int64
	next                int // round-robin
	res                 Result
	blockedSince        time.Duration
	blocked             bool
	anyReceived         bool
	readerBusy          time.Duration
	nextSample          time.Duration
}

// Run simulates cfg with allowance a at both the stream and the connection
// level. It checks its invariants as it goes and returns an error naming
// the first violation.
func Run(cfg Config, a Allowance) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("flowsim %s: %w", cfg.Name, err)
	}
	if cfg.Sample == 0 {
		cfg.Sample = time.Millisecond
	}
	if cfg.InitialCwnd == 0 {
		cfg.InitialCwnd = 10
	}
	s := &sim{cfg: cfg, a: a, rng: rand.New(rand.NewPCG(cfg.Seed, 0x666c6f77)), cwnd: float64(cfg.InitialCwnd) * float64(cfg.MSS), ssthresh: 1e18}
	s.res = Result{Allowance: a.Name(), Scenario: cfg.Name, Source: "simulator"}
	s.send = make([]sendStream, cfg.Streams)
	s.recv = make([]recvStream, cfg.Streams)
	for i := range s.send {
		s.send[i].limit = cfg.StreamWindow
		s.recv[i] = recvStream{win: Window{MaxOffset: cfg.StreamWindow, Size: cfg.StreamWindow, Upper: cfg.StreamUpper}, pending: map[int64]int64{}}
	}
	s.conn = Window{MaxOffset: cfg.ConnWindow, Size: cfg.ConnWindow, Upper: cfg.ConnUpper}
	s.connLimit = cfg.ConnWindow
	s.res.MaxStreamWin, s.res.MaxConnWin = cfg.StreamWindow, cfg.ConnWindow
	s.sample(true)
	s.trySend()
	total := int64(cfg.Streams) * cfg.BytesPerStream
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		if err := s.handle(e); err != nil {
			return s.res, err
		}
		s.sample(false)
		if s.consumedAll() {
			break
		}
		s.trySend()
	}
	if !s.consumedAll() {
		return s.res, fmt.Errorf("flowsim %s/%s: the transfer stalled at %v", cfg.Name, a.Name(), s.now)
	}
	s.sample(true)
	s.res.BytesTotal = total
	s.res.CompletionS = s.now.Seconds()
	s.res.ThroughputMbps = float64(total) * 8 / s.now.Seconds() / 1e6
	return s.res, nil
}

func (s *sim) push(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.q, e)
}

func (s *sim) consumedAll() bool {
	for _, r := range s.recv {
		if r.consumed < s.cfg.BytesPerStream {
			return false
		}
	}
	return true
}

// trySend puts on the link everything flow and congestion control allow,
// round-robin over the streams, retransmissions first.
func (s *sim) trySend() {
	for {
		sent := false
		for k := 0; k < s.cfg.Streams; k++ {
			i := (s.next + k) % s.cfg.Streams
			st := &s.send[i]
			if len(st.retx) > 0 {
				if !s.cwndAllows(st.retx[0].n) {
					continue
				}
				e := st.retx[0]
				st.retx = st.retx[1:]
				s.transmit(i, e.off, e.n)
				s.res.Retransmits++
				sent = true
				s.next = i + 1
				break
			}
			n := min(s.cfg.MSS, s.cfg.BytesPerStream-st.sent, st.limit-st.sent, s.connLimit-s.connSent)
			if n <= 0 || !s.cwndAllows(n) {
				continue
			}
			s.transmit(i, st.sent, n)
			st.sent += n
			s.connSent += n
			sent = true
			s.next = i + 1
			break
		}
		if !sent {
			break
		}
	}
	s.trackBlocked()
}

func (s *sim) cwndAllows(n int64) bool {
	return !s.cfg.Congestion || float64(s.inflight+n) <= s.cwnd
}

// transmit serialises a packet onto the link and schedules its arrival or
// its loss. A loss is detected as RFC 9002 does once later packets are
// acknowledged: 9/8 of an RTT after the packet would have been.
func (s *sim) transmit(stream int, off, n int64) {
	start := max(s.now, s.linkBusy)
	s.linkBusy = start + time.Duration(float64(n+s.cfg.Overhead)*8/s.cfg.Rate*1e9)
	s.inflight += n
	if s.cfg.Loss > 0 && s.rng.Float64() < s.cfg.Loss {
		s.push(event{at: s.linkBusy + s.cfg.RTT()*9/8, kind: evLost, stream: stream, off: off, n: n, sent: s.now})
		return
	}
	s.push(event{at: s.linkBusy + s.cfg.OneWay, kind: evData, stream: stream, off: off, n: n})
}

// trackBlocked accumulates the time the sender had data but no credit.
func (s *sim) trackBlocked() {
	hasData := false
	for _, st := range s.send {
		if st.sent < s.cfg.BytesPerStream {
			hasData = true
		}
	}
	credit := false
	for _, st := range s.send {
		if st.sent < s.cfg.BytesPerStream && st.limit > st.sent && s.connLimit > s.connSent {
			credit = true
		}
	}
	// Blocked: data to send but no stream or connection credit for it
	// (what a QUIC sender reports with STREAM_DATA_BLOCKED/DATA_BLOCKED).
	blocked := hasData && !credit
	switch {
	case blocked && !s.blocked:
		s.blocked, s.blockedSince = true, s.now
	case !blocked && s.blocked:
		s.blocked = false
		s.res.BlockedS += (s.now - s.blockedSince).Seconds()
	}
}

func (s *sim) handle(e event) error {
	switch e.kind {
	case evData:
		if err := s.receive(e); err != nil {
			return err
		}
		// The receiver acknowledges every packet.
		s.push(event{at: s.now + s.cfg.OneWay, kind: evAck, n: e.n})
	case evAck:
		s.inflight -= e.n
		if s.cwnd < s.ssthresh {
			s.cwnd += float64(e.n)
		} else {
			s.cwnd += float64(s.cfg.MSS) * float64(e.n) / s.cwnd
		}
	case evLost:
		s.inflight -= e.n
		// One reduction per congestion event: losses of packets sent
		// before the last reduction belong to it (RFC 9002, 7.3.2).
		if e.sent >= s.recoveryStart {
			s.ssthresh = max(s.cwnd/2, 2*float64(s.cfg.MSS))
			s.cwnd = s.ssthresh
			s.recoveryStart = s.now
		}
		s.send[e.stream].retx = append(s.send[e.stream].retx, e)
	case evUpdate:
		if e.stream < 0 {
			s.connLimit = max(s.connLimit, e.off)
		} else {
			s.send[e.stream].limit = max(s.send[e.stream].limit, e.off)
		}
	case evConsumed:
		return s.consume(e.stream, e.n)
	}
	return nil
}

// receive stores a chunk and hands the in-order prefix to the application.
func (s *sim) receive(e event) error {
	r := &s.recv[e.stream]
	if e.off+e.n > r.win.MaxOffset {
		return fmt.Errorf("invariant: stream %d data to %d passes its advertised limit %d", e.stream, e.off+e.n, r.win.MaxOffset)
	}
	if e.off < r.delivered {
		return fmt.Errorf("invariant: stream %d bytes at %d delivered twice", e.stream, e.off)
	}
	if _, dup := r.pending[e.off]; dup {
		return fmt.Errorf("invariant: stream %d chunk at %d received twice", e.stream, e.off)
	}
	if r.delivered == 0 && len(r.pending) == 0 {
		r.win.EpochStart = s.now // the stream's first data
	}
	if !s.anyReceived {
		s.anyReceived, s.conn.EpochStart = true, s.now
	}
	r.pending[e.off] = e.n
	var received int64
	for _, x := range s.recv {
		received += x.delivered
		for _, n := range x.pending {
			received += n
		}
	}
	if received > s.conn.MaxOffset {
		return fmt.Errorf("invariant: %d bytes received pass the connection's advertised limit %d", received, s.conn.MaxOffset)
	}
	for {
		n, ok := r.pending[r.delivered]
		if !ok {
			break
		}
		delete(r.pending, r.delivered)
		r.delivered += n
		if s.cfg.ConsumeRate > 0 {
			start := max(s.now, s.readerBusy)
			s.readerBusy = start + time.Duration(float64(n)/s.cfg.ConsumeRate*1e9)
			s.push(event{at: s.readerBusy, kind: evConsumed, stream: e.stream, n: n})
			continue
		}
		if err := s.consume(e.stream, n); err != nil {
			return err
		}
	}
	return nil
}

// consume lets the application read n bytes of a stream and asks the
// allowance, at stream and connection level, whether to send updates.
func (s *sim) consume(stream int, n int64) error {
	r := &s.recv[stream]
	if r.consumed == 0 {
		r.win.FirstRead = s.now
	}
	if s.conn.Consumed == 0 {
		s.conn.FirstRead = s.now
	}
	r.consumed += n
	r.win.Consumed = r.consumed
	s.conn.Consumed += n
	r.win.Occupancy = float64(r.win.Size) / float64(r.win.Upper) * 100
	before := r.win.Size
	if s.decide(&r.win, stream) {
		s.push(event{at: s.now + s.cfg.OneWay, kind: evUpdate, stream: stream, off: r.win.MaxOffset})
	}
	if c, ok := s.a.(ConnectionCoupler); ok && r.win.Size > before {
		c.StreamGrew(&s.conn, &r.win, s.now)
	}
	var sum int64
	for _, x := range s.recv {
		sum += x.win.Size
	}
	s.conn.Occupancy = float64(sum) / float64(s.conn.Upper) * 100
	if s.decide(&s.conn, -1) {
		s.push(event{at: s.now + s.cfg.OneWay, kind: evUpdate, stream: -1, off: s.conn.MaxOffset})
	}
	if r.win.Size > r.win.Upper || s.conn.Size > s.conn.Upper {
		return fmt.Errorf("invariant: a window passed its upper bound (stream %d/%d, connection %d/%d)", r.win.Size, r.win.Upper, s.conn.Size, s.conn.Upper)
	}
	s.res.MaxStreamWin = max(s.res.MaxStreamWin, r.win.Size)
	s.res.MaxConnWin = max(s.res.MaxConnWin, s.conn.Size)
	return nil
}

// decide asks the allowance about window w (stream, or -1 for the
// connection) and records an update it sends.
func (s *sim) decide(w *Window, stream int) bool {
	avail, size, limit := w.MaxOffset-w.Consumed, w.Size, w.MaxOffset
	if !s.a.Update(w, s.now, s.cfg.RTT(), s.cfg.MSS) {
		return false
	}
	s.res.WindowUpdates++
	s.res.Updates = append(s.res.Updates, Update{T: s.now, Stream: stream, Avail: avail, Size: w.Size, MaxOffset: w.MaxOffset, Credit: w.MaxOffset - limit, Grew: w.Size > size})
	return true
}

// sample records the time series at the configured resolution.
func (s *sim) sample(force bool) {
	if !force && s.now < s.nextSample {
		return
	}
	sm := Sample{T: s.now, Received: make([]int64, len(s.recv)), ConnWindow: s.conn.Size}
	for i, r := range s.recv {
		sm.Received[i] = r.consumed
		sm.MaxStreamWindow = max(sm.MaxStreamWindow, r.win.Size)
		sm.StreamWindowSum += r.win.Size
	}
	s.res.Series = append(s.res.Series, sm)
	s.nextSample = (s.now/s.cfg.Sample + 1) * s.cfg.Sample
}
