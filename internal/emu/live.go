package emu

import (
	"errors"
	"fmt"
	"strings"

	"tlab/internal/strictyaml"
)

// A live change sets some of a running direction's fields from a time on:
// `tlab link set` while a run or a shell lives. It is a timeline step
// whose at is when the engine received it; it overrides the timeline for
// the fields it sets from then on (a repeating timeline no longer moves
// them), and it is applied on the link's clock like a step: to packets
// arriving after it (delay, jitter, loss, queue limits) and transmissions
// starting after it (rate).

// liveChange is a field's value set live: from at on, the field moves from
// its value then to the new one over ramp.
type liveChange struct {
	segment
	active bool
}

func (l liveChange) value(t int64) float64 {
	if t >= l.at+l.ramp || l.ramp == 0 {
		return l.to
	}
	return l.from + (l.to-l.from)*float64(t-l.at)/float64(l.ramp)
}

// Set applies a live change at now (ns on the link clock). The direction
// must be able to change the fields: a loss needs a Bernoulli (or no) loss
// model, a rate a constant rate limiter, a queue limit a queue.
func (d *Direction) Set(now int64, step TimelineStep) error {
	step.At = 0
	if err := (Timeline{Steps: []TimelineStep{step}}).Validate(); err != nil {
		return err
	}
	_, set := step.values()
	switch {
	case set[fieldLoss] && d.stepped.loss == nil && (d.cfg.Loss.Model == LossGilbert || d.cfg.Loss.Model == LossOutages):
		return fmt.Errorf("loss: this direction's loss is %s; a live loss is a Bernoulli rate", d.cfg.Loss.Model)
	case set[fieldRate] && d.stepped.rate == nil && !d.constantRateShaper():
		return errors.New("rate: this direction has no constant rate limit to change (give it a rate; a trace or an 802.11 model sets its own)")
	case (set[fieldQueuePackets] || set[fieldQueueBytes]) && d.qdisc == nil:
		return errors.New("queue: this direction has no queue (it has no rate limit)")
	}
	if d.timeline == nil {
		d.timeline = &Schedule{}
		base := baseState(d.cfg)
		for f := range d.timeline.tracks {
			d.timeline.tracks[f].base = base[f]
		}
	}
	s := d.timeline
	if set[fieldLoss] && d.stepped.loss == nil {
		b := &Bernoulli{Rate: s.field(fieldLoss, now), rng: rngFor(d.seed, d.name, "loss-live")}
		d.loss, d.stepped.loss = b, b
	}
	if set[fieldJitter] && !s.changes(fieldJitter) {
		unit := d.cfg
		unit.Jitter = 1
		d.jitter = newJitterModel(unit, rngFor(d.seed, d.name, "jitter-live"))
	}
	if set[fieldRate] && d.stepped.rate == nil {
		d.stepped.rate = d.shaper.(*constantRate)
	}
	vals, _ := step.values()
	for f := range s.tracks {
		if !set[f] {
			continue
		}
		tr := &s.tracks[f]
		tr.live = liveChange{segment: segment{at: now, ramp: step.Ramp.D().Nanoseconds(), from: s.field(f, now), to: vals[f]}, active: true}
		tr.set = true
	}
	return nil
}

// constantRateShaper tells whether the direction's limiter is a constant
// rate a live change may set (not a trace's, not an 802.11 air's).
func (d *Direction) constantRateShaper() bool {
	_, ok := d.shaper.(*constantRate)
	return ok && d.air == nil
}

// ParseLiveChanges reads `tlab link set`'s changes, "up.loss=5%,delay=40ms,ramp=2s":
// each key a timeline field, dotted with up or down for one direction
// (both without), and ramp for all of them. It returns the step for each
// direction (nil when that direction does not change).
func ParseLiveChanges(s string) (up, down *TimelineStep, err error) {
	node, err := ParseOverrides(s)
	if err != nil {
		return nil, nil, err
	}
	var ov struct {
		Both TimelineStep `yaml:",inline"`
		Up   TimelineStep `yaml:"up"`
		Down TimelineStep `yaml:"down"`
	}
	if err := strictyaml.Decode("changes", node, &ov); err != nil {
		return nil, nil, err
	}
	if ov.Both.At != 0 || ov.Up.At != 0 || ov.Down.At != 0 {
		return nil, nil, errors.New("a live change takes effect now: give no at")
	}
	merge := func(d TimelineStep) *TimelineStep {
		out := ov.Both
		out.Where = ""
		if d.Ramp != 0 {
			out.Ramp = d.Ramp
		}
		if d.Delay != nil {
			out.Delay = d.Delay
		}
		if d.Jitter != nil {
			out.Jitter = d.Jitter
		}
		if d.Loss != nil {
			out.Loss = d.Loss
		}
		if d.Rate != nil {
			out.Rate = d.Rate
		}
		if d.QueuePackets != nil {
			out.QueuePackets = d.QueuePackets
		}
		if d.QueueBytes != nil {
			out.QueueBytes = d.QueueBytes
		}
		if !out.setsAny() {
			return nil
		}
		return &out
	}
	up, down = merge(ov.Up), merge(ov.Down)
	if up == nil && down == nil {
		return nil, nil, fmt.Errorf("%q changes nothing: give %s, each alone or as up.FIELD or down.FIELD", s, strings.Join(timelineFieldNames[:], ", "))
	}
	return up, down, nil
}
