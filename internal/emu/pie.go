package emu

import (
	"math/rand/v2"
	"time"
)

// PIE: RFC 8033. A proportional-integral controller sets a drop
// probability every tupdate from the queueing delay (its distance from
// target and its trend); arrivals are dropped with that probability (or
// marked, with ecn, while it is at most 10 %), with a burst allowance at
// start and the RFC's de-randomisation.
const (
	PIEName          = "pie"
	pieDefaultTarget = 15 * time.Millisecond
	pieDefaultUpdate = 15 * time.Millisecond
	pieMaxBurst      = 150 * time.Millisecond
	pieAlpha         = 0.125 // per second
	pieBeta          = 1.25  // per second
	pieMarkECNTh     = 0.1
	pieDefaultLimit  = 1000 // Linux's default buffer (packets)
)

func init() {
	registerQdisc(QdiscKind{
		Name:                PIEName,
		Doc:                 "Proportional Integral controller Enhanced: drops (or marks, with ecn, up to 10 %) arrivals with a probability updated every interval (15 ms) to keep the queueing delay near target (15 ms); buffer 1000 packets unless the profile gives one",
		Source:              "RFC 8033 (Pan, Natarajan, Baker, White, 2017): sections 4 and 5 (auto-tuned alpha and beta, burst allowance, de-randomisation), the queue delay from timestamps (section 5.2's alternative)",
		Params:              []string{"target", "interval", "ecn"},
		DefaultLimitPackets: pieDefaultLimit,
		New: func(c QueueConfig, limit Backlog, rng *rand.Rand) Qdisc {
			p := &pie{limit: limit, rng: rng, ecn: c.ECN, target: orDefault(c.Target, pieDefaultTarget), burst: int64(pieMaxBurst)}
			p.clock.period = orDefault(c.Interval, pieDefaultUpdate)
			p.calculate = p.calculateAt
			return p
		},
	})
}

type pie struct {
	q     fifo
	limit Backlog
	rng   *rand.Rand
	ecn   bool

	target         int64
	prob, accuProb float64
	// qdelay is the latest sojourn time measured at dequeue (0 once the
	// queue empties); qdelayOld the one of the previous update.
	qdelay, qdelayOld int64
	burst             int64 // burst allowance left
	clock             updateClock
	calculate         func(at int64) // calculateAt, bound once
}

// update runs the controller for every update boundary passed by now.
func (p *pie) update(now int64) { p.clock.due(now, p.calculate) }

// calculateAt is RFC 8033's calculate_drop_prob.
func (p *pie) calculateAt(int64) {
	const s = float64(time.Second)
	delta := pieAlpha*float64(p.qdelay-p.target)/s + pieBeta*float64(p.qdelay-p.qdelayOld)/s
	// Auto-tuning: small probabilities move in small steps.
	switch {
	case p.prob < 0.000001:
		delta /= 2048
	case p.prob < 0.00001:
		delta /= 512
	case p.prob < 0.0001:
		delta /= 128
	case p.prob < 0.001:
		delta /= 32
	case p.prob < 0.01:
		delta /= 8
	case p.prob < 0.1:
		delta /= 2
	}
	if p.prob >= 0.1 && delta > 0.02 {
		delta = 0.02
	}
	p.prob += delta
	if p.qdelay == 0 && p.qdelayOld == 0 {
		p.prob *= 0.98
	}
	p.prob = min(max(p.prob, 0), 1)
	if p.burst > 0 {
		p.burst = max(p.burst-p.clock.period, 0)
	}
	if p.prob == 0 && p.qdelay < p.target/2 && p.qdelayOld < p.target/2 {
		p.burst = int64(pieMaxBurst)
	}
	p.qdelayOld = p.qdelay
}

// dropEarly is RFC 8033's drop_early with de-randomisation.
func (p *pie) dropEarly(backlog Backlog) bool {
	if p.burst > 0 || (p.qdelayOld < p.target/2 && p.prob < 0.2) || backlog.Bytes <= 2*MaxFrame {
		return false
	}
	if p.prob == 0 {
		p.accuProb = 0
	}
	// accu_prob is a float sum of drop_prob, which falls short of the
	// RFC's exact thresholds (85 × 0.1 sums to 8.4999...): compare with a
	// little slack, as Linux's fixed-point sum needs none.
	const slack = 1e-9
	p.accuProb += p.prob
	if p.accuProb < 0.85-slack {
		return false
	}
	if p.accuProb >= 8.5-slack || p.rng.Float64() < p.prob {
		p.accuProb = 0
		return true
	}
	return false
}

func (p *pie) Enqueue(now int64, pk Packet, backlog Backlog, drop func(Packet)) {
	p.update(now)
	if over(backlog, p.limit, pk.Size) {
		drop(pk)
		return
	}
	if p.dropEarly(backlog) {
		if !(p.ecn && pk.ECT() && p.prob <= pieMarkECNTh) {
			drop(pk)
			return
		}
		pk.Mark = true
	}
	p.q.push(pk)
}

func (p *pie) Dequeue(now int64, _ func(Packet)) (Packet, bool) {
	p.update(now)
	pk, ok := p.q.pop()
	if ok && p.q.len() > 0 {
		p.qdelay = now - pk.Arrived
	} else {
		p.qdelay = 0
	}
	return pk, ok
}

func (p *pie) Len() int { return p.q.len() }
