package emu

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// TimelineStep changes some of a direction's settings at a time of the
// cell (At, on the link's clock: time since the emulator started). A field
// left out keeps its value. With Ramp the fields move linearly from the
// value in force at At to the step's value over Ramp, as a load that
// builds up or a radio that walks out of range.
type TimelineStep struct {
	At   units.Duration `yaml:"at" json:"at"`
	Ramp units.Duration `yaml:"ramp" json:"ramp,omitempty"`

	Delay  *units.Duration `yaml:"delay" json:"delay,omitempty"`
	Jitter *units.Duration `yaml:"jitter" json:"jitter,omitempty"`
	// Loss is a Bernoulli loss rate.
	Loss         *units.Ratio   `yaml:"loss" json:"loss,omitempty"`
	Rate         *units.Bitrate `yaml:"rate" json:"rate,omitempty"`
	QueuePackets *int           `yaml:"queue_packets" json:"queue_packets,omitempty"`
	QueueBytes   *units.Size    `yaml:"queue_bytes" json:"queue_bytes,omitempty"`

	// Where is where the step was written ("FILE:LINE"), for errors.
	Where string `yaml:"-" json:"-"`
}

// Timeline is a direction's changes over time: steps given in the profile
// or scenario, or read from a CSV time series (File). With Repeat the
// steps repeat with that period, each period starting again from the
// direction's own settings.
type Timeline struct {
	Steps  []TimelineStep `yaml:"steps" json:"steps,omitempty"`
	Repeat units.Duration `yaml:"repeat" json:"repeat,omitempty"`
	File   string         `yaml:"file" json:"file,omitempty"`
}

// Empty tells whether the timeline changes nothing.
func (t Timeline) Empty() bool { return len(t.Steps) == 0 }

type plainTimeline Timeline

// UnmarshalYAML accepts a list of steps (run once) or a mapping with
// steps or a CSV file and, optionally, repeat. A file is read here, so
// that its errors come with the scenario's and the file's lines.
func (t *Timeline) UnmarshalYAML(n *yaml.Node) error {
	var out Timeline
	if n.Kind == yaml.SequenceNode {
		if err := strictyaml.Check("", n, reflect.TypeOf([]TimelineStep{})); err != nil {
			return err
		}
		if err := n.Decode(&out.Steps); err != nil {
			return err
		}
	} else {
		if err := strictyaml.Check("", n, reflect.TypeOf(plainTimeline{})); err != nil {
			return err
		}
		var p plainTimeline
		if err := n.Decode(&p); err != nil {
			return err
		}
		out = Timeline(p)
		if out.File != "" {
			if len(out.Steps) > 0 {
				return fmt.Errorf("line %d: timeline: give steps or a file, not both", n.Line)
			}
			steps, err := LoadTimelineCSV(out.File)
			if err != nil {
				return fmt.Errorf("line %d: timeline: %w", n.Line, err)
			}
			out.Steps = steps
		}
	}
	// Steps keep the line they were written on, for Validate's errors.
	if items := stepNodes(n); len(items) == len(out.Steps) {
		for i, item := range items {
			out.Steps[i].Where = fmt.Sprintf("line %d", item.Line)
		}
	}
	if err := out.Validate(); err != nil {
		var se *stepError
		if errors.As(err, &se) && se.where != "" {
			return fmt.Errorf("%s: timeline: %s", se.where, se.msg) // it names its own line
		}
		return fmt.Errorf("line %d: timeline: %w", n.Line, err)
	}
	*t = out
	return nil
}

// stepNodes returns the step items of a timeline node, list or mapping.
func stepNodes(n *yaml.Node) []*yaml.Node {
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "steps" && n.Content[i+1].Kind == yaml.SequenceNode {
			return n.Content[i+1].Content
		}
	}
	return nil
}

// stepError is a step's problem, named by where the step was written
// (or its number).
type stepError struct {
	where string
	msg   string
}

func (e *stepError) Error() string {
	if e.where == "" {
		return e.msg
	}
	return e.where + ": " + e.msg
}

// MaxTimelineSteps bounds a timeline: a CSV series of one row every 10 ms
// for 10 minutes is 60 000 rows.
const MaxTimelineSteps = 100_000

// Validate reports the first impossible step: times that go back, a step
// that starts before the previous one's ramp has ended, a step that sets
// nothing, values out of range, a repeat shorter than the steps.
func (t Timeline) Validate() error {
	if len(t.Steps) > MaxTimelineSteps {
		return fmt.Errorf("%d steps: at most %d", len(t.Steps), MaxTimelineSteps)
	}
	var end time.Duration // when the previous step's ramp ends
	for i, s := range t.Steps {
		fail := func(format string, args ...any) error {
			e := &stepError{where: s.Where, msg: fmt.Sprintf(format, args...)}
			if e.where == "" {
				e.where, e.msg = "", fmt.Sprintf("step %d: %s", i+1, e.msg)
			}
			return e
		}
		switch {
		case s.At < 0 || s.Ramp < 0:
			return fail("at and ramp are times from the start, not negative")
		case i > 0 && s.At.D() <= t.Steps[i-1].At.D():
			return fail("at %v is not after the previous step's %v", s.At, t.Steps[i-1].At)
		case i > 0 && s.At.D() < end:
			return fail("at %v is before the previous step's ramp ends (%v)", s.At, units.Duration(end))
		case !s.setsAny():
			return fail("the step sets nothing: give delay, jitter, loss, rate, queue_packets or queue_bytes")
		case s.Delay != nil && *s.Delay < 0, s.Jitter != nil && *s.Jitter < 0:
			return fail("a negative delay or jitter")
		case s.Loss != nil && (*s.Loss < 0 || *s.Loss > 1 || math.IsNaN(float64(*s.Loss))):
			return fail("loss %v is outside 0..100%%", *s.Loss)
		case s.Rate != nil && (*s.Rate < 0 || math.IsInf(float64(*s.Rate), 0) || math.IsNaN(float64(*s.Rate))):
			return fail("rate %v is not a rate", *s.Rate)
		case s.QueuePackets != nil && *s.QueuePackets < 0, s.QueueBytes != nil && *s.QueueBytes < 0:
			return fail("a negative queue limit")
		}
		// Sums are checked against overflow: a fuzzed 290-year ramp must
		// not wrap around to the past.
		if s.At.D() > math.MaxInt64/4 || s.Ramp.D() > math.MaxInt64/4 {
			return fail("at %v with ramp %v is too far", s.At, s.Ramp)
		}
		end = s.At.D() + s.Ramp.D()
	}
	if t.Repeat < 0 {
		return errors.New("repeat is negative")
	}
	if t.Repeat > 0 && len(t.Steps) > 0 && end > t.Repeat.D() {
		return fmt.Errorf("repeat %v is shorter than the steps (the last ends at %v)", t.Repeat, units.Duration(end))
	}
	if t.Repeat > 0 && len(t.Steps) > 0 && t.Steps[len(t.Steps)-1].At.D() >= t.Repeat.D() {
		return fmt.Errorf("repeat %v: the last step at %v would never run", t.Repeat, t.Steps[len(t.Steps)-1].At)
	}
	return nil
}

func (s TimelineStep) setsAny() bool {
	return s.Delay != nil || s.Jitter != nil || s.Loss != nil || s.Rate != nil || s.QueuePackets != nil || s.QueueBytes != nil
}

// validateWith checks a timeline against the direction it changes: the
// fields it steps must be ones the direction can change as it runs.
func (t Timeline) validateWith(d DirectionConfig) error {
	var loss, rate bool
	for _, s := range t.Steps {
		loss = loss || s.Loss != nil
		rate = rate || s.Rate != nil
	}
	switch {
	case loss && (d.Loss.Model == LossGilbert || d.Loss.Model == LossOutages):
		return fmt.Errorf("timeline: a step's loss is a Bernoulli rate, and this direction's loss is %s: give its loss as a rate, or step it in another profile", d.Loss.Model)
	case rate && d.Trace != "":
		return errors.New("timeline: a trace sets the rate; a timeline's rate steps need a rate instead")
	case rate && d.WiFi.Enabled():
		return errors.New("timeline: the 802.11 model's airtime follows one rate; it cannot be stepped")
	}
	return nil
}

// TimelineState is a direction's changeable settings at one time.
type TimelineState struct {
	Delay        time.Duration
	Jitter       time.Duration
	Loss         float64 // Bernoulli rate
	RateBps      float64 // 0: unlimited
	QueuePackets int
	QueueBytes   int64
}

// The fields a timeline changes, in TimelineState's order.
const (
	fieldDelay = iota
	fieldJitter
	fieldLoss
	fieldRate
	fieldQueuePackets
	fieldQueueBytes
	numTimelineFields
)

// timelineFieldNames are the fields' names in profiles, CSV headers and
// the link-events file.
var timelineFieldNames = [numTimelineFields]string{"delay", "jitter", "loss", "rate", "queue_packets", "queue_bytes"}

// segment is one step of one field: from At the value moves from from to
// to over ramp (ns), then holds.
type segment struct {
	at, ramp int64
	from, to float64
}

// track is one field's value over one period of the timeline.
type track struct {
	base float64
	segs []segment
	set  bool // some step changes the field
	// live is the value set while the link runs (live.go), which holds
	// from its time on whatever the timeline says.
	live liveChange
}

// value is the field's value at t (ns into the period).
func (tr *track) value(t int64) float64 {
	lo, hi := 0, len(tr.segs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if tr.segs[mid].at <= t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return tr.base
	}
	s := tr.segs[lo-1]
	if t >= s.at+s.ramp {
		return s.to
	}
	return s.from + (s.to-s.from)*float64(t-s.at)/float64(s.ramp)
}

// Schedule is a direction's timeline made into functions of time: the
// pure core that the emulator asks, packet by packet, for the settings in
// force. It allocates nothing when asked.
type Schedule struct {
	period int64 // ns; 0: the steps run once
	tracks [numTimelineFields]track
}

// baseState is what a direction's own settings say, before any step.
func baseState(d DirectionConfig) [numTimelineFields]float64 {
	var loss float64
	if d.Loss.Model == LossBernoulli {
		loss = float64(d.Loss.Rate)
	}
	return [numTimelineFields]float64{
		float64(d.Delay.D()), float64(d.Jitter.D()), loss, d.Rate.BitsPerSecond(),
		float64(d.QueuePackets), float64(d.QueueBytes),
	}
}

// NewSchedule builds the schedule of d's timeline, or nil when it has
// none.
func NewSchedule(d DirectionConfig) *Schedule {
	if d.Timeline.Empty() {
		return nil
	}
	s := &Schedule{period: d.Timeline.Repeat.D().Nanoseconds()}
	base := baseState(d)
	for f := range s.tracks {
		s.tracks[f].base = base[f]
	}
	for _, st := range d.Timeline.Steps {
		vals, set := st.values()
		for f := range s.tracks {
			if !set[f] {
				continue
			}
			tr := &s.tracks[f]
			// The ramp starts from the value in force when the step
			// begins: the previous step's end (steps never overlap).
			from := tr.base
			if n := len(tr.segs); n > 0 {
				from = tr.segs[n-1].to
			}
			tr.segs = append(tr.segs, segment{at: st.At.D().Nanoseconds(), ramp: st.Ramp.D().Nanoseconds(), from: from, to: vals[f]})
			tr.set = true
		}
	}
	return s
}

// values returns the step's fields in TimelineState's order and which it
// sets.
func (s TimelineStep) values() (v [numTimelineFields]float64, set [numTimelineFields]bool) {
	if s.Delay != nil {
		v[fieldDelay], set[fieldDelay] = float64(s.Delay.D()), true
	}
	if s.Jitter != nil {
		v[fieldJitter], set[fieldJitter] = float64(s.Jitter.D()), true
	}
	if s.Loss != nil {
		v[fieldLoss], set[fieldLoss] = float64(*s.Loss), true
	}
	if s.Rate != nil {
		v[fieldRate], set[fieldRate] = s.Rate.BitsPerSecond(), true
	}
	if s.QueuePackets != nil {
		v[fieldQueuePackets], set[fieldQueuePackets] = float64(*s.QueuePackets), true
	}
	if s.QueueBytes != nil {
		v[fieldQueueBytes], set[fieldQueueBytes] = float64(*s.QueueBytes), true
	}
	return v, set
}

// inPeriod maps a time on the link clock into the timeline's period.
func (s *Schedule) inPeriod(t int64) int64 {
	if s.period > 0 && t >= 0 {
		return t % s.period
	}
	return t
}

// field is one field's value at t (ns on the link clock).
func (s *Schedule) field(f int, t int64) float64 {
	tr := &s.tracks[f]
	if tr.live.active && t >= tr.live.at {
		return tr.live.value(t)
	}
	return tr.value(s.inPeriod(t))
}

// Changes tells whether the timeline steps field f.
func (s *Schedule) changes(f int) bool { return s != nil && s.tracks[f].set }

// At is the state at t on the link clock: every field, whether the
// timeline steps it or not. Queue limits are rounded to whole packets and
// bytes.
func (s *Schedule) At(t time.Duration) TimelineState {
	ns := t.Nanoseconds()
	return TimelineState{
		Delay:        time.Duration(math.Round(s.field(fieldDelay, ns))),
		Jitter:       time.Duration(math.Round(s.field(fieldJitter, ns))),
		Loss:         s.field(fieldLoss, ns),
		RateBps:      s.field(fieldRate, ns),
		QueuePackets: int(math.Round(s.field(fieldQueuePackets, ns))),
		QueueBytes:   int64(math.Round(s.field(fieldQueueBytes, ns))),
	}
}

// At returns the direction's settings at t on the link clock: its own,
// with its timeline's steps applied up to t.
func (d DirectionConfig) At(t time.Duration) DirectionConfig {
	s := NewSchedule(d)
	if s == nil {
		return d
	}
	st := s.At(t)
	out := d
	out.Timeline = Timeline{}
	out.Delay, out.Jitter = units.Duration(st.Delay), units.Duration(st.Jitter)
	out.Rate = units.Bitrate(st.RateBps)
	out.QueuePackets, out.QueueBytes = st.QueuePackets, units.Size(st.QueueBytes)
	if s.changes(fieldLoss) {
		out.Loss = LossConfig{Model: LossBernoulli, Rate: units.Ratio(st.Loss)}
		if st.Loss == 0 {
			out.Loss = LossConfig{}
		}
	}
	return out
}

// Describe says what the timeline does in a line: its steps (the first
// few) and its period.
func (t Timeline) Describe() string {
	if t.Empty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", units.Count(len(t.Steps), "step"))
	if t.Repeat > 0 {
		fmt.Fprintf(&b, " repeating every %v", t.Repeat)
	}
	if t.File != "" {
		fmt.Fprintf(&b, " from %s", t.File)
	}
	const shown = 4
	for i, s := range t.Steps {
		if i == shown {
			fmt.Fprintf(&b, "; …")
			break
		}
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%sat %v", sep, s.At)
		if s.Ramp > 0 {
			fmt.Fprintf(&b, " over %v", s.Ramp)
		}
		if s.Delay != nil {
			fmt.Fprintf(&b, " delay %v", *s.Delay)
		}
		if s.Jitter != nil {
			fmt.Fprintf(&b, " jitter %v", *s.Jitter)
		}
		if s.Loss != nil {
			fmt.Fprintf(&b, " loss %v", *s.Loss)
		}
		if s.Rate != nil {
			fmt.Fprintf(&b, " rate %v", *s.Rate)
		}
		if s.QueuePackets != nil {
			fmt.Fprintf(&b, " queue %d packets", *s.QueuePackets)
		}
		if s.QueueBytes != nil {
			fmt.Fprintf(&b, " queue %v", *s.QueueBytes)
		}
	}
	return b.String()
}
