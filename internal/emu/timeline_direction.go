package emu

import (
	"time"

	"tlab/internal/units"
)

// How a Direction follows its timeline. Every field is read from the
// schedule at a time on the link clock, never from the wall clock, so a
// change takes effect with the release precision of everything else:
//
//   - delay, jitter and loss at a packet's arrival: a packet arriving at or
//     after a step meets the new values, one already queued keeps the
//     delay and jitter of its arrival;
//   - rate when a packet's transmission starts: packets queued before a
//     step leave at the new rate once the transmitter reaches them;
//   - the queue's limits at an arrival: a lower limit drops none of what
//     is already queued, it refuses arrivals until the queue is under it.
//
// Each model still draws once per arriving packet, so the same seed gives
// every protocol the same pattern along the same timeline.

// timelineParts are the models a timeline changes.
type timelineParts struct {
	loss *Bernoulli
	rate *constantRate
	// queue limits: the discipline, its kind (for its default limit),
	// and what a default limit is sized from.
	limits       limitSetter
	kind         QdiscKind
	queueRateBps float64
	baseRTT      time.Duration
}

// limitSetter is a discipline whose buffer a timeline can change.
type limitSetter interface{ setLimit(Backlog) }

func (d *dropTail) setLimit(l Backlog) { d.limit = l }
func (f *fqCodel) setLimit(l Backlog)  { f.limit = l }
func (p *pie) setLimit(l Backlog)      { p.limit = l }
func (d *dualPI2) setLimit(l Backlog)  { d.limit = l }

// queueLimit is a direction's buffer: the packets or bytes given, or one
// bandwidth-delay product, or the discipline's own default when it has
// one and neither is given.
func queueLimit(packets int, bytes int64, rateBps float64, baseRTT time.Duration, kind QdiscKind) Backlog {
	if packets == 0 && bytes == 0 && kind.DefaultLimitPackets > 0 {
		return Backlog{Packets: kind.DefaultLimitPackets}
	}
	d := DirectionConfig{QueuePackets: packets, QueueBytes: units.Size(bytes)}
	return Backlog{Packets: packets, Bytes: d.QueueLimitBytes(rateBps, baseRTT)}
}

// useTimeline builds the schedule and the models it changes, and returns
// the rate a default queue is sized from: the direction's own, or, when
// it has none and the timeline sets one, the highest the timeline sets.
func (d *Direction) useTimeline(seed uint64, name string, rateBps float64) float64 {
	d.timeline = NewSchedule(d.cfg)
	s := d.timeline
	if s == nil {
		return rateBps
	}
	if s.changes(fieldLoss) {
		// The loss model's own generator, as without a timeline: a
		// Bernoulli link keeps its seeded pattern until a step.
		b := &Bernoulli{Rate: s.tracks[fieldLoss].base, rng: rngFor(seed, name, "loss")}
		d.loss, d.stepped.loss = b, b
	}
	if s.changes(fieldJitter) {
		// A unit spread, scaled at each arrival by the timeline's.
		unit := d.cfg
		unit.Jitter = 1
		d.jitter = newJitterModel(unit, rngFor(seed, name, "jitter"))
	}
	if s.changes(fieldRate) {
		r := &constantRate{}
		d.shaper, d.stepped.rate = r, r
		if rateBps == 0 {
			for _, seg := range s.tracks[fieldRate].segs {
				rateBps = max(rateBps, seg.to)
			}
		}
	}
	return rateBps
}

// arriveOnTimeline sets what a packet arriving at now meets: the delay,
// the jitter's spread, the loss rate and the queue's limits in force.
func (d *Direction) arriveOnTimeline(now int64, p *Packet) {
	s := d.timeline
	p.delayNs = int64(s.field(fieldDelay, now) + 0.5)
	if s.changes(fieldJitter) {
		p.jitterScale = s.field(fieldJitter, now)
	}
	if d.stepped.loss != nil {
		d.stepped.loss.Rate = s.field(fieldLoss, now)
	}
	if d.qdisc != nil && (s.changes(fieldQueuePackets) || s.changes(fieldQueueBytes)) {
		if ls, ok := d.qdisc.(limitSetter); ok {
			packets := int(s.field(fieldQueuePackets, now) + 0.5)
			bytes := int64(s.field(fieldQueueBytes, now) + 0.5)
			ls.setLimit(queueLimit(packets, bytes, d.stepped.queueRateBps, d.stepped.baseRTT, d.stepped.kind))
		}
	}
}

// rateAt sets the rate limiter to the timeline's rate at start, when a
// transmission starts; a rate of 0 is no limit.
func (d *Direction) rateAt(start int64) {
	bps := d.timeline.field(fieldRate, start)
	d.stepped.rate.nsPerByte, d.nsPerByte = 0, 0
	if bps > 0 {
		d.stepped.rate.nsPerByte = 8e9 / bps
		d.nsPerByte = d.stepped.rate.nsPerByte
	}
}
