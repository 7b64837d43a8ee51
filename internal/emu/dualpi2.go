package emu

import (
	"math/rand/v2"
	"time"
)

// DualPI2: RFC 9332, the dual-queue coupled AQM of L4S. Packets with the
// L4S identifier (ECT(1), CE) go to a shallow L queue marked from a 1 ms
// step and by a probability coupled to the classic queue's; the others go
// to the classic queue, whose PI2 controller drops (or marks ECT(0), with
// ecn) with the square of its base probability, so that a scalable flow
// and a classic one get about the same rate. The L queue is served first
// unless the classic head has waited tshift longer (a time-shifted FIFO).
// In overload (k·p' ≥ 1) both queues drop with p'² instead of marking.
const (
	DualPI2Name          = "dualpi2"
	dualDefaultTarget    = 15 * time.Millisecond
	dualDefaultUpdate    = 16 * time.Millisecond
	dualDefaultStep      = time.Millisecond
	dualAlpha            = 0.16 // per second
	dualBeta             = 3.2  // per second
	dualCoupling         = 2.0  // k
	dualDefaultLimit     = 10000
	dualTShiftPerTargets = 2 // tshift = 2 × target
)

func init() {
	registerQdisc(QdiscKind{
		Name:                DualPI2Name,
		Doc:                 "the L4S dual-queue coupled AQM: ECT(1) and CE packets in a low-latency queue marked above a 1 ms step or with the coupled probability k·p' (k = 2); the others in a classic queue dropped (or marked, with ecn) with p'², p' from a PI controller (target 15 ms, update 16 ms); buffer 10000 packets unless the profile gives one",
		Source:              "RFC 9332 (De Schepper, Briscoe, White, 2023): section 2.4 and appendix A's pseudocode; alpha 0.16 Hz, beta 3.2 Hz, k = 2",
		Params:              []string{"target", "interval", "ecn", "step"},
		DefaultLimitPackets: dualDefaultLimit,
		New: func(c QueueConfig, limit Backlog, rng *rand.Rand) Qdisc {
			d := &dualPI2{limit: limit, rng: rng, ecn: c.ECN, target: orDefault(c.Target, dualDefaultTarget), step: orDefault(c.Step, dualDefaultStep)}
			d.clock.period = orDefault(c.Interval, dualDefaultUpdate)
			d.control = d.controlAt
			return d
		},
	})
}

type dualPI2 struct {
	l, c  fifo
	limit Backlog
	rng   *rand.Rand
	ecn   bool

	target, step int64
	base         float64 // p', the PI controller's output
	qdelayOld    int64
	clock        updateClock
	control      func(at int64) // controlAt, bound once
}

// update runs the PI controller for every update boundary passed by now.
func (d *dualPI2) update(now int64) { d.clock.due(now, d.control) }

// controlAt is one PI update at time at, on the larger of the two queues'
// head sojourn times.
func (d *dualPI2) controlAt(at int64) {
	const s = float64(time.Second)
	var qdelay int64
	if p, ok := d.c.peek(); ok {
		qdelay = max(qdelay, at-p.Arrived)
	}
	if p, ok := d.l.peek(); ok {
		qdelay = max(qdelay, at-p.Arrived)
	}
	qdelay = max(qdelay, 0)
	d.base += dualAlpha*float64(qdelay-d.target)/s + dualBeta*float64(qdelay-d.qdelayOld)/s
	d.base = min(max(d.base, 0), 1)
	d.qdelayOld = qdelay
}

func (d *dualPI2) Enqueue(now int64, p Packet, backlog Backlog, drop func(Packet)) {
	d.update(now)
	if over(backlog, d.limit, p.Size) {
		drop(p)
		return
	}
	if p.L4S() {
		d.l.push(p)
	} else {
		d.c.push(p)
	}
}

func (d *dualPI2) Dequeue(now int64, drop func(Packet)) (Packet, bool) {
	d.update(now)
	tshift := dualTShiftPerTargets * d.target
	// The coupled L4S probability k·p' and the classic one p'². Once k·p'
	// reaches 1 the queue is overloaded (RFC 9332 section 4.2.3): ECN can
	// signal no more, and an unresponsive L4S sender would otherwise hold
	// the L queue full and starve the classic one.
	pCL, pC := dualCoupling*d.base, d.base*d.base
	overload := pCL >= 1
	for {
		lp, lok := d.l.peek()
		cp, cok := d.c.peek()
		switch {
		case lok && (!cok || lp.Arrived-tshift <= cp.Arrived):
			p, _ := d.l.pop()
			if overload {
				// Marking has saturated and no longer slows the L4S
				// senders: drop as the classic queue does, mark the rest.
				if d.rng.Float64() < pC {
					drop(p)
					continue
				}
				p.Mark = true
				return p, true
			}
			// The native step, or the coupled probability.
			if now-p.Arrived >= d.step || d.rng.Float64() < pCL {
				p.Mark = true
			}
			return p, true
		case cok:
			p, _ := d.c.pop()
			if d.rng.Float64() < pC {
				if d.ecn && p.ECT() && !overload {
					p.Mark = true
				} else {
					drop(p)
					continue
				}
			}
			return p, true
		default:
			return Packet{}, false
		}
	}
}

func (d *dualPI2) Len() int { return d.l.len() + d.c.len() }
