package emu

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// ECN codepoints of the IP header (RFC 3168, RFC 9331).
const (
	NotECT = 0
	ECT1   = 1 // the L4S identifier
	ECT0   = 2
	CE     = 3
)

// Packet is a frame waiting in a direction's queue: what a queue
// discipline may look at, and the models' draws for it, taken when it
// arrived (so that every packet meets the same fate whatever the queue
// does to those around it).
type Packet struct {
	Arrived int64 // ns on the link clock
	Size    int   // bytes, Ethernet header included
	Flow    uint32
	ECN     uint8
	// Mark asks for the packet to leave with CE set (a discipline marked
	// it instead of dropping it).
	Mark bool
	Ref  int32 // the caller's handle (the engine's buffer); never read here

	draws
}

// ECT tells whether the packet's sender understands ECN: a discipline
// may mark it instead of dropping it.
func (p Packet) ECT() bool { return p.ECN != NotECT }

// L4S tells whether the packet carries the L4S identifier (ECT(1) or CE,
// RFC 9331 section 5.1).
func (p Packet) L4S() bool { return p.ECN == ECT1 || p.ECN == CE }

// Backlog is what a direction holds: packets waiting in the discipline
// and the one on the wire.
type Backlog struct {
	Packets int
	Bytes   int64
}

// Qdisc is a queue discipline: what waits in front of a direction's
// transmitter, in which order it leaves, and what is dropped or marked on
// the way. The direction calls Dequeue when its transmitter is free, with
// the time the transmission would start; the discipline sees every
// arrival before any dequeue at a later time, as a kernel qdisc does.
//
// A discipline that drops at enqueue (drop-tail, PIE), one that drops at
// dequeue (CoDel), one with sub-queues (FQ-CoDel, DualPI2) and one that
// marks are each one file: they differ only in these two methods.
type Qdisc interface {
	// Enqueue takes p, arriving at now, into a queue that holds backlog
	// (p not included) within limit. Packets it drops, p or others (a
	// flow queue drops from its fattest flow), go to drop.
	Enqueue(now int64, p Packet, backlog Backlog, drop func(Packet))
	// Dequeue removes the packet whose transmission starts at now, if
	// any; packets it drops on the way go to drop.
	Dequeue(now int64, drop func(Packet)) (Packet, bool)
	// Len is how many packets wait.
	Len() int
}

// QueueConfig chooses a direction's queue discipline and its parameters;
// a zero parameter takes the discipline's default (its RFC's).
type QueueConfig struct {
	Type string `yaml:"type" json:"type,omitempty"`
	// Target is the queueing delay an AQM steers to; Interval is CoDel's
	// sliding window, or PIE's and DualPI2's update period.
	Target   units.Duration `yaml:"target" json:"target,omitempty"`
	Interval units.Duration `yaml:"interval" json:"interval,omitempty"`
	// ECN marks ECN-capable packets where the discipline would drop
	// them (DualPI2 always marks its L4S queue).
	ECN bool `yaml:"ecn" json:"ecn,omitempty"`
	// Flows and Quantum are FQ-CoDel's flow queues and their byte
	// quantum.
	Flows   int        `yaml:"flows" json:"flows,omitempty"`
	Quantum units.Size `yaml:"quantum" json:"quantum,omitempty"`
	// Step is DualPI2's marking threshold for the L4S queue.
	Step units.Duration `yaml:"step" json:"step,omitempty"`
}

type plainQueue QueueConfig

// UnmarshalYAML accepts a discipline's name alone ("queue: fq_codel") or a
// mapping with its parameters.
func (q *QueueConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*q = QueueConfig{Type: n.Value}
	} else {
		if err := strictyaml.Check("", n, reflect.TypeOf(plainQueue{})); err != nil {
			return err
		}
		p := plainQueue(*q)
		if err := n.Decode(&p); err != nil {
			return err
		}
		*q = QueueConfig(p)
	}
	field, err := q.validate()
	if err == nil {
		return nil
	}
	line := n.Line
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == field {
			line = n.Content[i].Line
		}
	}
	return fmt.Errorf("line %d: %w", line, err)
}

// Name is the discipline's name, drop-tail when none is given.
func (q QueueConfig) Name() string {
	if q.Type == "" {
		return DropTailName
	}
	return q.Type
}

// Validate checks the discipline's name and that its parameters are ones
// it takes.
func (q QueueConfig) Validate() error {
	_, err := q.validate()
	return err
}

// validate is Validate, naming the field at fault.
func (q QueueConfig) validate() (field string, err error) {
	k, ok := qdiscKinds[q.Name()]
	if !ok {
		return "type", fmt.Errorf("queue %q: want one of %s", q.Type, strings.Join(QdiscNames(), ", "))
	}
	given := []struct {
		name string
		set  bool
	}{{"target", q.Target != 0}, {"interval", q.Interval != 0}, {"ecn", q.ECN}, {"flows", q.Flows != 0}, {"quantum", q.Quantum != 0}, {"step", q.Step != 0}}
	for _, g := range given {
		if g.set && !slices.Contains(k.Params, g.name) {
			return g.name, fmt.Errorf("queue %s does not take %s (it takes %s)", k.Name, g.name, orNone(k.Params))
		}
	}
	if q.Target < 0 || q.Interval < 0 || q.Flows < 0 || q.Quantum < 0 || q.Step < 0 {
		return "", fmt.Errorf("queue %s: parameters must not be negative", k.Name)
	}
	return "", nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no parameters"
	}
	return strings.Join(s, ", ")
}

// QdiscKind is a queue discipline by name: where it comes from, the
// parameters it takes, its default buffer, and how to make one.
type QdiscKind struct {
	Name   string
	Doc    string
	Source string
	Params []string
	// DefaultLimitPackets is the buffer when the profile gives none (0:
	// one bandwidth-delay product, as for drop-tail).
	DefaultLimitPackets int
	New                 func(c QueueConfig, limit Backlog, rng *rand.Rand) Qdisc
}

var qdiscKinds = map[string]QdiscKind{}

// registerQdisc adds a discipline; each registers itself from its file.
func registerQdisc(k QdiscKind) {
	if _, dup := qdiscKinds[k.Name]; dup {
		panic("emu: queue discipline " + k.Name + " registered twice")
	}
	qdiscKinds[k.Name] = k
}

// QdiscNames lists the registered disciplines, sorted.
func QdiscNames() []string { return slices.Sorted(maps.Keys(qdiscKinds)) }

// QdiscKinds lists the registered disciplines, sorted by name.
func QdiscKinds() []QdiscKind {
	var out []QdiscKind
	for _, n := range QdiscNames() {
		out = append(out, qdiscKinds[n])
	}
	return out
}

// updateClock runs a controller every period on the virtual clock, lazily:
// a discipline calls due with each event's time, and the controller runs
// once for every boundary passed since (PIE's and DualPI2's updates).
type updateClock struct {
	period, next int64
	started      bool
}

// due calls update(at) for each period boundary at up to now, in order.
// The first call only starts the clock. After a long idle spell only the
// last thousand boundaries run: a controller's state has decayed to rest
// long before.
func (c *updateClock) due(now int64, update func(at int64)) {
	if !c.started {
		c.started, c.next = true, now+c.period
		return
	}
	if behind := (now - c.next) / c.period; behind > 1000 {
		c.next += (behind - 1000) * c.period
	}
	for ; now >= c.next; c.next += c.period {
		update(c.next)
	}
}

// fifo is a first-in-first-out queue of packets that counts their bytes,
// the building block of every discipline here.
type fifo struct {
	q     queue[Packet]
	bytes int64
}

func (q *fifo) push(p Packet) {
	q.q.push(p)
	q.bytes += int64(p.Size)
}

func (q *fifo) pop() (Packet, bool) {
	p, ok := q.q.pop()
	q.bytes -= int64(p.Size)
	return p, ok
}

func (q *fifo) peek() (Packet, bool) {
	if p := q.q.front(); p != nil {
		return *p, true
	}
	return Packet{}, false
}

func (q *fifo) len() int { return q.q.len() }

// orDefault is a parameter in ns: given, or the discipline's default.
func orDefault(given units.Duration, def time.Duration) int64 {
	if given > 0 {
		return given.D().Nanoseconds()
	}
	return int64(def)
}

// over tells whether adding size bytes to backlog exceeds limit (a zero
// bound does not bind).
func over(backlog, limit Backlog, size int) bool {
	return (limit.Packets > 0 && backlog.Packets+1 > limit.Packets) ||
		(limit.Bytes > 0 && backlog.Bytes+int64(size) > limit.Bytes)
}
