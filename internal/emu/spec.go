package emu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Arrival clocks of the engine.
const (
	// ArrivalKernel times each frame by the kernel's receive timestamp
	// (SO_TIMESTAMPNS on the packet socket): after the engine was stalled,
	// the queue, the rate limiter and the delay line still act on when the
	// frame really arrived.
	ArrivalKernel = "kernel"
	// ArrivalRead times each frame by when the engine read it.
	ArrivalRead = "read"
)

// Timer modes of the engine.
const (
	// ModeSleep sleeps in epoll_pwait2 until shortly before the next
	// release, then spins for the last SpinNs: low latency at a modest CPU
	// cost.
	ModeSleep = "sleep"
	// ModeBusy never sleeps: one core fully used, idle or not. It was the
	// default until ModeAdaptive measured as accurate (docs/methodology.md).
	ModeBusy = "busy"
	// ModeAdaptive spins only while a frame is due within one wake-up
	// latency of this host, measured when the engine starts and as it
	// runs (and, on links shorter than a wake-up, for that long after the
	// last frame it moved), and blocks otherwise: an idle link costs
	// nothing (adaptive.go). The default: measured against ModeBusy in
	// alternate rounds it added no latency at the median and its release
	// error's p99.9 was no worse, for a tenth of the CPU
	// (docs/methodology.md).
	ModeAdaptive = "adaptive"
)

// Modes lists the timer modes a user may choose, the default first.
func Modes() []string { return []string{ModeAdaptive, ModeBusy, ModeSleep} }

// Engines: how the loop reads frames and keeps them until their release.
// Both apply the same link models to the same frames.
const (
	// EngineRing reads frames from a memory-mapped receive ring
	// (TPACKET_V2) that a busy loop polls without a system call, and keeps
	// each direction's frames in a first-in-first-out line. The default:
	// measured against EngineMmsg in alternate rounds (tlab calibrate
	// --compare-engines, docs/methodology.md), it forwarded more, with
	// less time per frame, and added no more latency.
	EngineRing = "ring"
	// EngineMmsg reads frames with recvmmsg after epoll reports them and
	// keeps waiting frames in one heap: the engine's first design, kept
	// to compare against.
	EngineMmsg = "mmsg"
)

// Engines lists the engines a user may choose, the default first.
func Engines() []string { return []string{EngineRing, EngineMmsg} }

// EngineOptions choose how the emulator's engine runs. One struct carries
// them from a scenario's emulator: section (or tlab calibrate's flags)
// through the cell, the testbed and the calibration to the engine's child
// process, so that what a run is calibrated on is what its cells use.
type EngineOptions struct {
	// Mode is the timer mode: ModeAdaptive (the default, "" too),
	// ModeBusy (one core polls) or ModeSleep.
	Mode string `yaml:"mode" json:"mode"`
	// Arrival is where a frame's arrival time comes from: ArrivalKernel
	// (the default, "" too) or ArrivalRead.
	Arrival string `yaml:"arrival" json:"arrival,omitempty"`
	// Engine is EngineRing (the default, "" too) or EngineMmsg.
	Engine string `yaml:"engine" json:"engine,omitempty"`
	// CPU asks for the CPU of the engine's loop: 0 (the default) lets the
	// testbed pick the last CPU of a machine with more than one, -1 never
	// pins, N pins to CPU N. The engine gets the CPU chosen (EngineSpec.CPU).
	CPU int `yaml:"cpu" json:"-"`
	// DeferReads lets the adaptive loop leave arrivals unread while
	// frames wait on a plain delay (adaptive.go, readHoldNs). Off by
	// default: at 10 Mbit/s as the loop runs it saved no CPU (+0.32
	// [−0.53, +1.16] s per Gbit). (The early echoes once seen with it on
	// came from the batch's clock read, fixed for every read:
	// readClock.arrival.)
	DeferReads bool `yaml:"defer_reads" json:"defer_reads,omitempty"`
}

// Validate says which option is wrong, by its name in a scenario's
// emulator: section.
func (o EngineOptions) Validate() (field string, err error) {
	switch o.Mode {
	case "", ModeBusy, ModeSleep, ModeAdaptive:
	default:
		return "mode", fmt.Errorf("mode %q: want %s, %s or %s", o.Mode, ModeBusy, ModeSleep, ModeAdaptive)
	}
	switch o.Arrival {
	case "", ArrivalKernel, ArrivalRead:
	default:
		return "arrival", fmt.Errorf("arrival %q: want %s or %s", o.Arrival, ArrivalKernel, ArrivalRead)
	}
	if err := ValidEngine(o.Engine); err != nil {
		return "engine", err
	}
	if o.CPU < -1 || o.CPU >= 1024 {
		return "cpu", fmt.Errorf("cpu %d: want -1 (never pin), 0 (the last CPU) or a CPU number", o.CPU)
	}
	return "", nil
}

// WithDefaults fills what is empty with the defaults: adaptive, kernel,
// ring.
func (o EngineOptions) WithDefaults() EngineOptions {
	if o.Mode == "" {
		o.Mode = ModeAdaptive
	}
	if o.Arrival == "" {
		o.Arrival = ArrivalKernel
	}
	if o.Engine == "" {
		o.Engine = EngineRing
	}
	return o
}

// EngineSpec is everything the engine process needs; the parent sends it as
// the first JSON line on the child's standard input. Socket file
// descriptors are passed as extra files: port i's socket is fd 3+i.
type EngineSpec struct {
	Seed uint64 `json:"seed"`
	// EngineOptions are the run's (mode, arrival, engine), inline.
	EngineOptions
	SpinNs int64 `json:"spin_ns"`
	// RealtimePriority, when above 0, runs the loop under SCHED_FIFO.
	RealtimePriority int `json:"realtime_priority"`
	// CPU, when 0 or above, pins the engine's loop to that CPU: the one
	// the testbed chose for EngineOptions.CPU.
	CPU   int        `json:"cpu"`
	MTU   int        `json:"mtu"`
	Links []LinkSpec `json:"links"`
}

// LinkSpec is one emulated link: its two directions and its ports. Side A
// is the "up" source, side B the "down" source. A side may have several ports
// (hosts sharing one medium): frames are forwarded by destination MAC and
// flooded to every port of the other side when the MAC is unknown or a
// group address.
type LinkSpec struct {
	Name      string     `json:"name"`
	Config    LinkConfig `json:"config"`
	TraceUp   []int64    `json:"trace_up,omitempty"`
	TraceDown []int64    `json:"trace_down,omitempty"`
	Ports     []PortSpec `json:"ports"`
}

// Sides of a link.
const (
	SideA = 0
	SideB = 1
)

// PortSpec is one router-side interface of a link.
type PortSpec struct {
	Side    int              `json:"side"`
	HostMAC net.HardwareAddr `json:"host_mac"`
	Host    string           `json:"host"`
}

// LinkStats are one link's counters.
type LinkStats struct {
	Name string         `json:"name"`
	Up   DirectionStats `json:"up"`
	Down DirectionStats `json:"down"`
}

// EngineStats is the engine's answer to a stats request.
type EngineStats struct {
	Links []LinkStats `json:"links"`
	// Lateness of releases: when a frame was handed to the kernel minus
	// when it was due.
	Lateness LatencySummary `json:"lateness"`
	// ReadLag is how long after the kernel received a frame the engine
	// read it: the arrival-time error that kernel timestamps remove (with
	// ArrivalRead, the error the models then make). Empty when the kernel
	// gave no timestamps.
	ReadLag LatencySummary `json:"read_lag"`
	// Forwarded counts frames sent, all links together.
	Forwarded uint64 `json:"forwarded"`
	Wakeups   uint64 `json:"wakeups"`
	// ClockNs is the engine's link clock when the snapshot was taken.
	ClockNs int64 `json:"clock_ns"`
	// Loop is the forwarding loop's own account of itself.
	Loop LoopStats `json:"loop"`
	// SpinNs is how long before a release the loop starts to spin now:
	// in ModeAdaptive the p99 of its measured wake-up latency, in
	// ModeSleep the configured spin, 0 in ModeBusy.
	SpinNs int64 `json:"spin_ns,omitempty"`
}

// LoopStats is what the forwarding loop counts of itself since it started:
// how often its thread lost its CPU, how much of its time went to frames
// rather than to polling for them, and what the kernel dropped before it
// could read. A busy-polling loop looks 100 % busy to the kernel at any
// load; BusyNs is the part of that time in rounds that moved a frame.
type LoopStats struct {
	// VoluntarySwitches and InvoluntarySwitches are the loop thread's
	// context switches (getrusage RUSAGE_THREAD): a voluntary one is the
	// thread parking (a wait in the kernel or Go's scheduler), an
	// involuntary one another thread taking its CPU.
	VoluntarySwitches   uint64 `json:"voluntary_switches"`
	InvoluntarySwitches uint64 `json:"involuntary_switches"`
	// BusyNs is the time in loop rounds that received, released or
	// dropped a frame, less any time they spent blocked in a wait;
	// Received counts the frames read.
	BusyNs   int64  `json:"busy_ns"`
	Received uint64 `json:"received"`
	// KernelDrops counts frames the kernel dropped at the engine's packet
	// sockets before the engine read them (PACKET_STATISTICS): a frame
	// lost there was never offered to the link's models.
	KernelDrops uint64 `json:"kernel_drops"`
	// CPUNs is the CPU time (user and system, every thread) the engine's
	// process has used (getrusage RUSAGE_SELF): what the emulator costs
	// the machine, where BusyNs is what of it went to frames.
	CPUNs int64 `json:"cpu_ns"`
}

// Sub is the loop's account between two snapshots, o then s.
func (s LoopStats) Sub(o LoopStats) LoopStats {
	return LoopStats{
		VoluntarySwitches:   s.VoluntarySwitches - o.VoluntarySwitches,
		InvoluntarySwitches: s.InvoluntarySwitches - o.InvoluntarySwitches,
		BusyNs:              s.BusyNs - o.BusyNs,
		Received:            s.Received - o.Received,
		KernelDrops:         s.KernelDrops - o.KernelDrops,
		CPUNs:               s.CPUNs - o.CPUNs,
	}
}

// Link returns the stats of the named link.
func (s EngineStats) Link(name string) (LinkStats, bool) {
	for _, l := range s.Links {
		if l.Name == name {
			return l, true
		}
	}
	return LinkStats{}, false
}

// control is a request from the parent.
type control struct {
	Op string `json:"op"` // "stats", "reset_lateness", "stop", "set"
	// Set's change: the link by name, the direction ("up" or "down")
	// and the fields (live.go).
	Link      string        `json:"link,omitempty"`
	Direction string        `json:"direction,omitempty"`
	Step      *TimelineStep `json:"step,omitempty"`
}

// SetReply is the engine's answer to a live change: when on the link
// clock it took effect, or why it could not.
type SetReply struct {
	AtNs int64 `json:"at_ns"`
	// State is the direction's settings once the change's ramp has
	// ended.
	State TimelineState `json:"state"`
	Error string        `json:"error,omitempty"`
}

// maxControlLine bounds one control request: the parent's are a few
// dozen bytes, so a longer line without a newline is not a request.
const maxControlLine = 4096

// nextControl takes the first whole request line from buf: its op, and
// what follows it. A partial line leaves ok false and buf as it is; a
// line that is not a request, or a partial one past maxControlLine, is
// an error.
func nextControl(buf []byte) (op string, rest []byte, ok bool, err error) {
	c, rest, ok, err := nextRequest(buf)
	return c.Op, rest, ok, err
}

// nextRequest is nextControl with the whole request.
func nextRequest(buf []byte) (c control, rest []byte, ok bool, err error) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) > maxControlLine {
			return control{}, buf, false, fmt.Errorf("control: %d bytes without a newline", len(buf))
		}
		return control{}, buf, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(buf[:i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return control{}, buf, false, fmt.Errorf("control: %w", err)
	}
	if dec.More() {
		return control{}, buf, false, errors.New("control: more than one object on a line")
	}
	switch c.Op {
	case "stats", "reset_lateness", "stop":
	case "set":
		if c.Step == nil || (c.Direction != "up" && c.Direction != "down") {
			return control{}, buf, false, errors.New("control: set needs a step and a direction, up or down")
		}
	default:
		return control{}, buf, false, fmt.Errorf("control: unknown op %q", c.Op)
	}
	return c, buf[i+1:], true, nil
}

// Validate checks a spec before the engine uses it: it comes over a pipe
// from the parent, and a field out of range must be an error that says
// which, never an index out of range in the loop.
func (s EngineSpec) Validate() error {
	if _, err := s.EngineOptions.Validate(); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	switch {
	case s.SpinNs < 0 || s.SpinNs > int64(time.Second):
		return fmt.Errorf("spec: spin_ns %d: want 0 to 1e9", s.SpinNs)
	case s.RealtimePriority < 0 || s.RealtimePriority > 99:
		return fmt.Errorf("spec: realtime_priority %d: want 0 to 99", s.RealtimePriority)
	case s.CPU < -1 || s.CPU >= 1024:
		return fmt.Errorf("spec: cpu %d: want -1 (any) or a CPU number", s.CPU)
	case s.MTU != 0 && (s.MTU < 68 || s.MTU > 65535):
		return fmt.Errorf("spec: mtu %d: want 68 to 65535", s.MTU)
	}
	for i, l := range s.Links {
		for j, p := range l.Ports {
			if p.Side != SideA && p.Side != SideB {
				return fmt.Errorf("spec: link %d (%s) port %d: side %d: want %d or %d", i, l.Name, j, p.Side, SideA, SideB)
			}
			if len(p.HostMAC) != 0 && len(p.HostMAC) != 6 {
				return fmt.Errorf("spec: link %d (%s) port %d: a MAC of %d bytes", i, l.Name, j, len(p.HostMAC))
			}
		}
	}
	return nil
}

// Ports counts the port sockets the spec's links name: the files the
// engine expects, in order, from fd 3.
func (s EngineSpec) Ports() int {
	n := 0
	for _, l := range s.Links {
		n += len(l.Ports)
	}
	return n
}

// ValidEngine says whether name is an engine ("" is the default).
func ValidEngine(name string) error {
	if name == "" {
		return nil
	}
	for _, e := range Engines() {
		if name == e {
			return nil
		}
	}
	return fmt.Errorf("engine %q: want %s or %s", name, EngineRing, EngineMmsg)
}
