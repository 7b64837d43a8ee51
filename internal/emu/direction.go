package emu

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// DropCause says why a packet was not delivered.
type DropCause uint8

const (
	Delivered DropCause = iota
	DropLoss
	DropQueue
	DropOutage
	DropOversize
	DropTxError
	DropRetries
	numDropCauses
)

var dropNames = [...]string{"delivered", "loss", "queue", "outage", "oversize", "tx_error", "retry_limit"}

func (c DropCause) String() string { return dropNames[c] }

// Verdict is a Direction's decision for one packet.
type Verdict struct {
	Drop DropCause
	// Release is when the frame leaves the emulator (ns on the link clock).
	Release int64
	// Duplicate asks for a second copy released at the same time.
	Duplicate bool
	// CorruptBit, when >= 0, is the bit to flip, counted from the start of
	// the frame's payload after the Ethernet header.
	CorruptBit int
}

// DirectionStats are a direction's counters. Bytes are Ethernet frames as
// read from the wire: header included, preamble, FCS and inter-frame gap
// excluded. Rx counts what entered the emulator, Tx what left it.
type DirectionStats struct {
	RxPackets   uint64 `json:"rx_packets"`
	RxBytes     uint64 `json:"rx_bytes"`
	TxPackets   uint64 `json:"tx_packets"`
	TxBytes     uint64 `json:"tx_bytes"`
	DropLoss    uint64 `json:"drop_loss"`
	DropQueue   uint64 `json:"drop_queue"`
	DropOutage  uint64 `json:"drop_outage"`
	DropOversz  uint64 `json:"drop_oversize"`
	DropTxError uint64 `json:"drop_tx_error"`
	// DropRetries counts frames lost after the 802.11 retry limit;
	// WiFiRetries every retransmission on the air.
	DropRetries uint64 `json:"drop_retries,omitempty"`
	WiFiRetries uint64 `json:"wifi_retries,omitempty"`
	Duplicated  uint64 `json:"duplicated"`
	Corrupted   uint64 `json:"corrupted"`
	Reordered   uint64 `json:"reordered"`
	// Queueing delay: the wait before transmission starts, for packets
	// that passed the queue.
	QueueDelaySumNs uint64 `json:"queue_delay_sum_ns"`
	QueueDelayMaxNs uint64 `json:"queue_delay_max_ns"`
	QueuedPackets   uint64 `json:"queued_packets"`
}

// Drops returns the sum of all drop counters.
func (s DirectionStats) Drops() uint64 {
	return s.DropLoss + s.DropQueue + s.DropOutage + s.DropOversz + s.DropTxError + s.DropRetries
}

// Sub returns s minus an earlier snapshot (the counters are monotonic; the
// maximum queueing delay is kept as is).
func (s DirectionStats) Sub(o DirectionStats) DirectionStats {
	return DirectionStats{
		RxPackets: s.RxPackets - o.RxPackets, RxBytes: s.RxBytes - o.RxBytes,
		TxPackets: s.TxPackets - o.TxPackets, TxBytes: s.TxBytes - o.TxBytes,
		DropLoss: s.DropLoss - o.DropLoss, DropQueue: s.DropQueue - o.DropQueue,
		DropOutage: s.DropOutage - o.DropOutage, DropOversz: s.DropOversz - o.DropOversz,
		DropTxError: s.DropTxError - o.DropTxError, DropRetries: s.DropRetries - o.DropRetries, WiFiRetries: s.WiFiRetries - o.WiFiRetries,
		Duplicated: s.Duplicated - o.Duplicated,
		Corrupted:  s.Corrupted - o.Corrupted, Reordered: s.Reordered - o.Reordered,
		QueueDelaySumNs: s.QueueDelaySumNs - o.QueueDelaySumNs, QueueDelayMaxNs: s.QueueDelayMaxNs,
		QueuedPackets: s.QueuedPackets - o.QueuedPackets,
	}
}

// count records a drop or a transmission.
func (s *DirectionStats) count(c DropCause, size int) {
	switch c {
	case Delivered:
		s.TxPackets++
		s.TxBytes += uint64(size)
	case DropLoss:
		s.DropLoss++
	case DropQueue:
		s.DropQueue++
	case DropOutage:
		s.DropOutage++
	case DropOversize:
		s.DropOversz++
	case DropTxError:
		s.DropTxError++
	case DropRetries:
		s.DropRetries++
	}
}

type queued struct {
	arrived, depart int64
	size            int
}

// Direction applies one DirectionConfig to a stream of packets. It is not
// safe for concurrent use: the engine calls it from its single loop.
type Direction struct {
	cfg       DirectionConfig
	delayNs   int64
	queue     Queue
	shaper    Shaper
	nsPerByte float64 // transmission time, for queueing-delay accounting
	// air is the constant-rate shaper when an 802.11 MAC adds airtime
	// (shared by both directions of a half-duplex link); mac draws the
	// retries.
	air *constantRate
	mac *wifiMAC

	loss     LossModel
	jitter   JitterModel
	dupRng   *rand.Rand
	reordRng *rand.Rand
	corrRng  *rand.Rand

	backlog      []queued // packets not yet fully transmitted, FIFO
	backlogBytes int64
	lastRelease  int64
	lastAdmit    int64

	Stats DirectionStats
}

// Seeds derives one generator per model from a run seed and a name for the
// direction (for example "client-server/up"), so that directions and models
// never share a stream.
func rngFor(seed uint64, direction, model string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(direction))
	h.Write([]byte{0})
	h.Write([]byte(model))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// NewDirection builds a direction from its config. baseRTT sizes the default
// queue; trace holds the parsed rate trace when cfg.Trace is set.
func NewDirection(cfg DirectionConfig, baseRTTNs int64, seed uint64, name string, trace []int64) (*Direction, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &Direction{
		cfg:      cfg,
		delayNs:  cfg.Delay.D().Nanoseconds(),
		loss:     newLossModel(cfg.Loss, rngFor(seed, name, "loss")),
		jitter:   newJitterModel(cfg, rngFor(seed, name, "jitter")),
		dupRng:   rngFor(seed, name, "duplicate"),
		reordRng: rngFor(seed, name, "reorder"),
		corrRng:  rngFor(seed, name, "corrupt"),
	}
	baseRTT := time.Duration(baseRTTNs)
	switch {
	case cfg.Trace != "":
		if len(trace) == 0 {
			return nil, fmt.Errorf("%s: trace %s not loaded", name, cfg.Trace)
		}
		d.shaper = newTraceRate(trace)
		d.queue = DropTail{LimitPackets: cfg.QueuePackets, LimitBytes: cfg.QueueLimitBytes(TraceMeanRate(trace), baseRTT)}
	case cfg.Rate > 0:
		r := newConstantRate(cfg.Rate.BitsPerSecond())
		d.shaper, d.nsPerByte = r, r.nsPerByte
		d.queue = DropTail{LimitPackets: cfg.QueuePackets, LimitBytes: cfg.QueueLimitBytes(cfg.Rate.BitsPerSecond(), baseRTT)}
		if cfg.WiFi.Enabled() {
			d.air, d.mac = r, newWiFiMAC(cfg.WiFi, rngFor(seed, name, "wifi"))
		}
	}
	return d, nil
}

// NewLink builds a link's two directions (named NAME/up and NAME/down).
// On a half-duplex 802.11 link both directions contend for one air: they
// share one transmitter, so a frame waits for frames in either direction.
func NewLink(cfg LinkConfig, seed uint64, name string, traceUp, traceDown []int64) (up, down *Direction, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	baseRTT := cfg.BaseRTT().Nanoseconds()
	if up, err = NewDirection(cfg.Up, baseRTT, seed, name+"/up", traceUp); err != nil {
		return nil, nil, err
	}
	if down, err = NewDirection(cfg.Down, baseRTT, seed, name+"/down", traceDown); err != nil {
		return nil, nil, err
	}
	if cfg.Up.WiFi.HalfDuplex && up.air != nil && down.air != nil {
		down.air = up.air
		down.shaper = up.air
	}
	return up, down, nil
}

// Admit decides the fate of a frame of size bytes arriving at now (ns on the
// link clock). Every model draws once, whatever the outcome, so decisions for
// the k-th packet do not depend on what happened to earlier ones.
//
// The direction's clock never goes back: a frame stamped earlier than one
// already admitted (several hosts on one side, read one socket after the
// other) is taken as arriving with it, since it is served after it anyway.
func (d *Direction) Admit(now int64, size int) Verdict {
	now = max(now, d.lastAdmit)
	d.lastAdmit = now
	d.Stats.RxPackets++
	d.Stats.RxBytes += uint64(size)

	lost := d.loss.Lost()
	jit := d.jitter.Sample()
	dup := d.dupRng.Float64() < float64(d.cfg.Duplicate)
	reord := d.reordRng.Float64() < float64(d.cfg.Reorder)
	corrDraw := d.corrRng.Float64()
	corrBit := d.corrRng.IntN(max(size-14, 1) * 8)
	var retries int
	var airtimeNs float64
	var macLost bool
	if d.mac != nil {
		retries, airtimeNs, macLost = d.mac.attempt(float64(size) * d.nsPerByte)
	}

	v := Verdict{CorruptBit: -1}
	switch {
	case d.inOutage(now):
		v.Drop = DropOutage
	case lost:
		v.Drop = DropLoss
	}
	if v.Drop != Delivered {
		d.Stats.count(v.Drop, size)
		return v
	}

	depart := now
	if d.shaper != nil {
		d.drain(now)
		var headWait int64
		if len(d.backlog) > 0 {
			headWait = now - d.backlog[0].arrived
		}
		if !d.queue.Admit(now, size, len(d.backlog), d.backlogBytes, headWait) {
			v.Drop = DropQueue
			d.Stats.count(v.Drop, size)
			return v
		}
		if d.air != nil {
			depart = d.air.departureAfter(now, size, airtimeNs)
			d.Stats.WiFiRetries += uint64(retries)
		} else {
			depart = d.shaper.Departure(now, size)
		}
		d.backlog = append(d.backlog, queued{arrived: now, depart: depart, size: size})
		d.backlogBytes += int64(size)
		wait := depart - now - int64(float64(size)*d.nsPerByte+airtimeNs)
		if wait > 0 {
			d.Stats.QueueDelaySumNs += uint64(wait)
			d.Stats.QueueDelayMaxNs = max(d.Stats.QueueDelayMaxNs, uint64(wait))
		}
		d.Stats.QueuedPackets++
		if macLost {
			// It held the air for every attempt, then the MAC gave up.
			v.Drop = DropRetries
			d.Stats.count(v.Drop, size)
			return v
		}
	}

	release := depart + d.delayNs + int64(jit)
	release = max(release, depart)
	if reord {
		// netem's reordering: this packet skips the delay line.
		release = depart
		d.Stats.Reordered++
	} else if !d.cfg.JitterReorders {
		release = max(release, d.lastRelease)
		d.lastRelease = release
	}
	v.Release = release
	if dup {
		v.Duplicate = true
		d.Stats.Duplicated++
	}
	if corrDraw < float64(d.cfg.Corrupt) && size > 14 {
		v.CorruptBit = corrBit
		d.Stats.Corrupted++
	}
	return v
}

// drain forgets packets whose transmission has ended by now.
func (d *Direction) drain(now int64) {
	i := 0
	for i < len(d.backlog) && d.backlog[i].depart <= now {
		d.backlogBytes -= int64(d.backlog[i].size)
		i++
	}
	if i > 0 {
		n := copy(d.backlog, d.backlog[i:])
		d.backlog = d.backlog[:n]
	}
}

func (d *Direction) inOutage(now int64) bool {
	for _, o := range d.cfg.Outages {
		at, dur := o.At.D().Nanoseconds(), o.For.D().Nanoseconds()
		if now < at {
			continue
		}
		off := now - at
		if o.Every > 0 {
			off %= o.Every.D().Nanoseconds()
		}
		if off < dur {
			return true
		}
	}
	return false
}

// CountTx records a frame the engine has sent (or failed to send).
func (d *Direction) CountTx(c DropCause, size int) { d.Stats.count(c, size) }
