package emu

import (
	"math"
	"math/rand/v2"
	"time"
)

// CoDel: RFC 8289. It drops at dequeue, when the queue has kept a
// packet's sojourn time above target for a whole interval, at a pace that
// quickens with the square root of the drops (the control law), and stops
// as soon as a packet leaves within target.
const (
	CoDelName            = "codel"
	codelDefaultTarget   = 5 * time.Millisecond
	codelDefaultInterval = 100 * time.Millisecond
	// codelDefaultLimit is Linux's default buffer for codel (packets).
	codelDefaultLimit = 1000
)

func init() {
	registerQdisc(QdiscKind{
		Name:                CoDelName,
		Doc:                 "Controlled Delay: drops (or marks, with ecn) at dequeue once packets have waited longer than target (5 ms) for an interval (100 ms); buffer 1000 packets unless the profile gives one",
		Source:              "RFC 8289 (Nichols, Jacobson, McGregor, Iyengar, 2018), section 5's pseudocode, as Linux's codel_impl.h runs it",
		Params:              []string{"target", "interval", "ecn"},
		DefaultLimitPackets: codelDefaultLimit,
		New: func(c QueueConfig, limit Backlog, _ *rand.Rand) Qdisc {
			return &codel{dropTail: dropTail{limit: limit}, state: newCodelState(c)}
		},
	})
}

// codel is drop-tail's buffer (its Enqueue and Len) with CoDel's dequeue.
type codel struct {
	dropTail
	state codelState
}

func (c *codel) Dequeue(now int64, drop func(Packet)) (Packet, bool) {
	return c.state.dequeue(now, &c.q, drop)
}

// codelState is one queue's CoDel state (FQ-CoDel keeps one per flow).
type codelState struct {
	target, interval int64
	ecn              bool
	firstAbove       int64 // when the sojourn time will have been above target for an interval; 0: below
	dropNext         int64
	count, lastCount uint32
	dropping         bool
}

func newCodelState(c QueueConfig) codelState {
	return codelState{target: orDefault(c.Target, codelDefaultTarget), interval: orDefault(c.Interval, codelDefaultInterval), ecn: c.ECN}
}

// controlLaw is when to drop next: t + interval / sqrt(count).
func (s *codelState) controlLaw(t int64) int64 {
	return t + int64(float64(s.interval)/math.Sqrt(float64(s.count)))
}

// shouldDrop looks at a packet just dequeued at now: whether the queue has
// been above target for an interval. A queue left with less than one
// full frame is not a standing queue.
func (s *codelState) shouldDrop(p Packet, ok bool, now int64, q *fifo) bool {
	if !ok {
		s.firstAbove = 0
		return false
	}
	if now-p.Arrived < s.target || q.bytes <= MaxFrame {
		s.firstAbove = 0
		return false
	}
	if s.firstAbove == 0 {
		s.firstAbove = now + s.interval
		return false
	}
	return now >= s.firstAbove
}

// mark sets CE on an ECN-capable packet, when marking is on.
func (s *codelState) mark(p *Packet) bool {
	if s.ecn && p.ECT() {
		p.Mark = true
		return true
	}
	return false
}

// dequeue is RFC 8289's dequeue on q.
func (s *codelState) dequeue(now int64, q *fifo, drop func(Packet)) (Packet, bool) {
	p, ok := q.pop()
	if !ok {
		s.dropping = false
		return p, false
	}
	okToDrop := s.shouldDrop(p, ok, now, q)
	switch {
	case s.dropping:
		if !okToDrop {
			s.dropping = false
			break
		}
		for s.dropping && now >= s.dropNext {
			s.count++
			if s.mark(&p) {
				s.dropNext = s.controlLaw(s.dropNext)
				return p, true
			}
			drop(p)
			p, ok = q.pop()
			if !s.shouldDrop(p, ok, now, q) {
				s.dropping = false
			} else {
				s.dropNext = s.controlLaw(s.dropNext)
			}
		}
	case okToDrop:
		if !s.mark(&p) {
			drop(p)
			p, ok = q.pop()
			s.shouldDrop(p, ok, now, q)
		}
		s.dropping = true
		// Start near the rate that last controlled the queue, if that was
		// recent.
		delta := s.count - s.lastCount
		if delta > 1 && now-s.dropNext < 16*s.interval {
			s.count = delta
		} else {
			s.count = 1
		}
		s.lastCount = s.count
		s.dropNext = s.controlLaw(now)
	}
	return p, ok
}
