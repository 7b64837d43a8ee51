// Package emu is tlab's link emulator. It has two halves:
//
//   - the models (this file and its neighbours): loss, jitter, rate and queue,
//     rate traces, outages, duplication, reordering and corruption, composed
//     per direction into a Direction that decides, for each packet, whether it
//     is dropped and when it is released. They run on a virtual clock
//     (nanoseconds since the link started) and are tested against their
//     statistics without any network;
//   - the engine (engine_linux.go): a forwarder that reads Ethernet frames
//     from AF_PACKET sockets, asks each Direction what to do, and writes the
//     frames out at their release time. It runs in a child process of its own
//     so that no workload goroutine can delay it.
//
// Every random decision comes from a generator seeded per link, per direction
// and per model, and each model draws exactly once per arriving packet, so
// the k-th packet in a direction meets the same fate whatever protocol sent
// it: the same seed gives every protocol the same loss and jitter pattern.
package emu

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"tlab/internal/units"
)

// Where a trace starts (DirectionConfig.TracePhase).
const (
	TracePhaseStart  = "start"
	TracePhaseRandom = "random"
)

// Loss model names.
const (
	LossNone      = "none"
	LossBernoulli = "bernoulli"
	LossGilbert   = "gilbert-elliott"
	LossOutages   = "outages"
)

// LossConfig selects a loss model. Gilbert-Elliott takes netem's four
// parameters (p, r, 1-h, 1-k), or a mean loss rate and a mean burst length
// (then the bad state always loses, the good state never).
type LossConfig struct {
	Model string      `yaml:"model" json:"model,omitempty"`
	Rate  units.Ratio `yaml:"rate" json:"rate,omitempty"`
	// Gilbert-Elliott transition probabilities per packet: good to bad (P)
	// and bad to good (R); loss probabilities in the bad (OneMinusH) and
	// good (OneMinusK) states.
	P         units.Ratio `yaml:"p" json:"p,omitempty"`
	R         units.Ratio `yaml:"r" json:"r,omitempty"`
	OneMinusH units.Ratio `yaml:"1-h" json:"one_minus_h,omitempty"`
	OneMinusK units.Ratio `yaml:"1-k" json:"one_minus_k,omitempty"`
	MeanBurst float64     `yaml:"mean_burst" json:"mean_burst,omitempty"`
	// Outages: the link alternates between up and down in time, each
	// stretch's length drawn from an exponential distribution with these
	// means; while down it loses every packet, while up each with
	// probability Rate. Unlike Gilbert-Elliott's bursts, counted in
	// packets, an outage lasts a time whatever the sender does: a
	// backed-off sender that sends one packet a second meets the same
	// 300 ms outage as a busy one.
	MeanOutage  units.Duration `yaml:"mean_outage" json:"mean_outage,omitempty"`
	MeanBetween units.Duration `yaml:"mean_between" json:"mean_between,omitempty"`
}

// Outage is a scheduled interval during which the link delivers nothing:
// packets that arrive then are dropped. With Every set it repeats.
type Outage struct {
	At    units.Duration `yaml:"at" json:"at"`
	For   units.Duration `yaml:"for" json:"for"`
	Every units.Duration `yaml:"every" json:"every,omitempty"`
}

// Jitter distributions.
const (
	DistUniform      = "uniform"
	DistNormal       = "normal"
	DistPareto       = "pareto"
	DistParetoNormal = "paretonormal"
	DistLogNormal    = "lognormal"
)

// DirectionConfig describes one direction of a link. The zero value is a
// perfect wire: no delay, no loss, no rate limit.
type DirectionConfig struct {
	// Delay is the one-way propagation delay.
	Delay units.Duration `yaml:"delay" json:"delay"`
	// Jitter is the spread of the delay (half-width for uniform, standard
	// deviation for normal); JitterDist names the distribution.
	Jitter     units.Duration `yaml:"jitter" json:"jitter,omitempty"`
	JitterDist string         `yaml:"jitter_dist" json:"jitter_dist,omitempty"`
	// JitterReorders lets jitter reorder packets. By default a packet is
	// never released before the one that arrived before it, as on a wire.
	JitterReorders bool `yaml:"jitter_reorders" json:"jitter_reorders,omitempty"`
	// JitterCorrelation correlates each packet's jitter with the previous
	// one's (0 to below 1): a latent normal follows an AR(1) process of
	// that coefficient and is mapped through the distribution's quantile
	// function (a Gaussian copula), so the distribution is unchanged and
	// a slow and a fast stretch come as on a scheduled radio link.
	JitterCorrelation units.Ratio `yaml:"jitter_correlation" json:"jitter_correlation,omitempty"`
	// JitterCoherence correlates the jitter in time instead: two packets
	// Δt apart have their latent normals correlated by exp(−Δt /
	// JitterCoherence) (an Ornstein–Uhlenbeck process), so a slow stretch
	// lasts as long whatever the packet rate, as a radio's wait for its
	// slot or a retransmission does. Packet-to-packet correlation makes a
	// dense burst cross many more stretches than a sparse one.
	JitterCoherence units.Duration `yaml:"jitter_coherence" json:"jitter_coherence,omitempty"`

	// Rate limits the direction; 0 means unlimited. Bytes counted are
	// whole Ethernet frames without preamble and FCS.
	Rate units.Bitrate `yaml:"rate" json:"rate,omitempty"`
	// Trace replaces Rate by a mahimahi trace: one line per 1500-byte
	// delivery opportunity, in milliseconds, repeating.
	Trace string `yaml:"trace" json:"trace,omitempty"`
	// TracePhase is where in its period the trace starts: "start" (the
	// default, as mahimahi: its first line with the cell) or "random" (a
	// point drawn from the cell's seed, the same for every protocol of a
	// repetition and another for each repetition). A recording of a real
	// path is random: the path's slow stretches and stalls came at no
	// particular time of a cell, and a replay that always starts at the
	// recording's first second meets them at one point of every cell.
	TracePhase string `yaml:"trace_phase" json:"trace_phase,omitempty"`
	// QueueBytes and QueuePackets bound the buffer in front of the rate
	// limiter. When both are zero the queue holds one bandwidth-delay
	// product (rate times the link's base RTT), at least QueueFloorPackets
	// full frames.
	QueueBytes   units.Size `yaml:"queue_bytes" json:"queue_bytes,omitempty"`
	QueuePackets int        `yaml:"queue_packets" json:"queue_packets,omitempty"`
	// Queue is the discipline in front of the rate limiter (drop-tail
	// by default); an AQM without a buffer given takes its own default.
	Queue QueueConfig `yaml:"queue" json:"queue,omitzero"`

	Loss LossConfig `yaml:"loss" json:"loss"`
	// Duplicate, Reorder and Corrupt are per-packet probabilities. A
	// reordered packet skips the delay line (netem's rule); a corrupted one
	// has one random bit flipped after its Ethernet header.
	Duplicate units.Ratio `yaml:"duplicate" json:"duplicate,omitempty"`
	Reorder   units.Ratio `yaml:"reorder" json:"reorder,omitempty"`
	Corrupt   units.Ratio `yaml:"corrupt" json:"corrupt,omitempty"`

	Outages []Outage `yaml:"outages" json:"outages,omitempty"`

	// WiFi models 802.11's link layer on this direction: frame errors on
	// the air, the MAC's retries and their airtime (see WiFiConfig).
	WiFi WiFiConfig `yaml:"wifi" json:"wifi,omitzero"`

	// Timeline changes delay, jitter, loss, rate and the queue's limits
	// while the link runs (timeline.go).
	Timeline Timeline `yaml:"timeline" json:"timeline,omitzero"`
}

// LinkConfig is a link's two directions: Up from side A (the client side) to
// side B, Down from B to A.
type LinkConfig struct {
	Up   DirectionConfig `yaml:"up" json:"up"`
	Down DirectionConfig `yaml:"down" json:"down"`
}

// IsPerfect tells whether the link emulates nothing at all.
func (l LinkConfig) IsPerfect() bool { return reflect.DeepEqual(l, LinkConfig{}) }

// BaseRTT is the sum of the two directions' propagation delays.
func (l LinkConfig) BaseRTT() time.Duration { return l.Up.Delay.D() + l.Down.Delay.D() }

// MaxFrame is the largest Ethernet frame (header included, FCS excluded) for
// the default MTU; queue floors are counted in such frames.
const MaxFrame = 1514

// QueueFloorPackets is the smallest default queue, in full frames, so that a
// link with a tiny bandwidth-delay product still absorbs a burst.
const QueueFloorPackets = 8

// QueueLimitBytes returns the byte bound of the queue for this direction
// when it is served at rateBps on a link with the given base RTT, and 0 when
// only a packet bound (or no bound) applies.
func (d DirectionConfig) QueueLimitBytes(rateBps float64, baseRTT time.Duration) int64 {
	if d.QueueBytes > 0 {
		return int64(d.QueueBytes)
	}
	if d.QueuePackets > 0 || rateBps == 0 {
		return 0
	}
	bdp := int64(rateBps * baseRTT.Seconds() / 8)
	return max(bdp, QueueFloorPackets*MaxFrame)
}

// Validate reports the first impossible setting.
func (d DirectionConfig) Validate() error {
	switch d.JitterDist {
	case "", DistUniform, DistNormal, DistPareto, DistParetoNormal, DistLogNormal:
	default:
		return fmt.Errorf("jitter_dist %q: want uniform, normal, pareto, paretonormal or lognormal", d.JitterDist)
	}
	switch {
	case d.JitterCorrelation < 0 || d.JitterCorrelation >= 1:
		return fmt.Errorf("jitter_correlation %v: want 0 to below 100%%", d.JitterCorrelation)
	case d.JitterCorrelation > 0 && d.Jitter == 0:
		return errors.New("jitter_correlation without jitter: give jitter too")
	case d.JitterCoherence < 0:
		return fmt.Errorf("jitter_coherence %v: want a positive time", d.JitterCoherence)
	case d.JitterCoherence > 0 && d.Jitter == 0:
		return errors.New("jitter_coherence without jitter: give jitter too")
	case d.JitterCoherence > 0 && d.JitterCorrelation > 0:
		return errors.New("jitter_correlation and jitter_coherence both correlate the jitter, from packet to packet and in time: give one")
	}
	if d.Trace != "" && d.Rate != 0 {
		return errors.New("rate and trace are exclusive: a trace sets the rate")
	}
	switch {
	case d.TracePhase != "" && d.TracePhase != TracePhaseStart && d.TracePhase != TracePhaseRandom:
		return fmt.Errorf("trace_phase %q: want %s or %s", d.TracePhase, TracePhaseStart, TracePhaseRandom)
	case d.TracePhase != "" && d.Trace == "":
		return errors.New("trace_phase without a trace: give trace too")
	}
	if d.QueuePackets < 0 {
		return errors.New("queue_packets is negative")
	}
	if err := d.Queue.Validate(); err != nil {
		return err
	}
	if err := d.Loss.Validate(); err != nil {
		return fmt.Errorf("loss: %w", err)
	}
	if err := d.WiFi.Validate(); err != nil {
		return err
	}
	if d.WiFi.Enabled() && (d.Rate == 0 || d.Trace != "") {
		return errors.New("wifi: the 802.11 model needs a constant rate (the airtime of a frame is its size over the rate)")
	}
	if err := d.Timeline.Validate(); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	if err := d.Timeline.validateWith(d); err != nil {
		return err
	}
	for i, o := range d.Outages {
		if o.For <= 0 {
			return fmt.Errorf("outages[%d]: for must be positive", i)
		}
		if o.Every != 0 && o.Every <= o.For {
			return fmt.Errorf("outages[%d]: every (%v) must be longer than for (%v)", i, o.Every, o.For)
		}
	}
	return nil
}

// Validate checks the loss parameters against their model.
func (l LossConfig) Validate() error {
	switch l.Model {
	case "", LossNone:
		if l.Rate != 0 || l.P != 0 || l.R != 0 {
			return errors.New("parameters given but model is none: set model to bernoulli or gilbert-elliott")
		}
	case LossBernoulli:
		if l.P != 0 || l.R != 0 || l.MeanBurst != 0 {
			return errors.New("bernoulli takes only rate")
		}
	case LossGilbert:
		if l.MeanBurst != 0 {
			if l.P != 0 || l.R != 0 {
				return errors.New("give either rate and mean_burst, or p, r, 1-h, 1-k")
			}
			if l.MeanBurst < 1 {
				return errors.New("mean_burst is at least 1 packet")
			}
			if l.Rate >= 1 {
				return errors.New("rate must be below 100% with mean_burst")
			}
			return nil
		}
		if l.P == 0 && l.R == 0 {
			return errors.New("gilbert-elliott needs p and r (and 1-h, 1-k), or rate and mean_burst")
		}
		if l.R == 0 {
			return errors.New("r = 0 would keep the link in the bad state forever")
		}
	case LossOutages:
		if l.P != 0 || l.R != 0 || l.MeanBurst != 0 || l.OneMinusH != 0 || l.OneMinusK != 0 {
			return errors.New("outages takes mean_outage, mean_between and (between outages) rate")
		}
		if l.MeanOutage <= 0 || l.MeanBetween <= 0 {
			return errors.New("outages needs mean_outage and mean_between, both positive")
		}
		if l.Rate >= 1 {
			return errors.New("rate (the loss between outages) must be below 100%")
		}
	default:
		return fmt.Errorf("model %q: want none, bernoulli, gilbert-elliott or outages", l.Model)
	}
	if l.Model != LossOutages && (l.MeanOutage != 0 || l.MeanBetween != 0) {
		return errors.New("mean_outage and mean_between belong to model outages")
	}
	return nil
}

// Validate checks both directions, and that a half-duplex medium is
// shared by two directions of one rate.
func (l LinkConfig) Validate() error {
	if err := l.Up.Validate(); err != nil {
		return fmt.Errorf("up: %w", err)
	}
	if err := l.Down.Validate(); err != nil {
		return fmt.Errorf("down: %w", err)
	}
	if l.Up.WiFi.HalfDuplex || l.Down.WiFi.HalfDuplex {
		if !l.Up.WiFi.HalfDuplex || !l.Down.WiFi.HalfDuplex || l.Up.Rate != l.Down.Rate {
			return errors.New("wifi: half_duplex shares the air between both directions: set it for both, with one rate")
		}
	}
	return nil
}
