package emu

import (
	"fmt"
	"hash/fnv"
	"math"
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
	// Mark asks for CE in the frame's IP header: the queue discipline
	// marked it instead of dropping it.
	Mark bool
}

// Emit receives a Direction's verdict on the frame the caller handed in
// with ref: its release, or why it was dropped.
type Emit func(ref int32, v Verdict)

// Frame is what a Direction is told of an arriving frame.
type Frame struct {
	Size int
	// Flow identifies the frame's transport flow (a hash of addresses,
	// protocol and ports, ParseFrame's), for flow queueing; ECN is its IP
	// header's ECN field.
	Flow uint32
	ECN  uint8
	// Ref is the caller's handle, given back with the verdict.
	Ref int32
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
	// ECNMarked counts packets the queue marked CE instead of dropping.
	ECNMarked uint64 `json:"ecn_marked,omitempty"`
	// QueueDelay counts the queueing delays of QueuedPackets in
	// logarithmic buckets, for their percentiles.
	QueueDelay SojournHistogram `json:"queue_delay_hist"`
	// Delivered is the one-way delay of every packet released, from its
	// arrival (its wait in the queue included).
	Delivered PacketDelays `json:"delivered_delay"`
	// Sent is the one-way delay of every packet released from the start
	// of its transmission: what a probe on the sending host sees, since
	// packet capture taps after the host's transmit queue (Linux's
	// AF_PACKET sees a packet as the qdisc hands it to the driver), and
	// the emulated queue stands for that transmit queue.
	Sent PacketDelays `json:"sent_delay"`
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
		QueuedPackets: s.QueuedPackets - o.QueuedPackets, ECNMarked: s.ECNMarked - o.ECNMarked,
		QueueDelay: s.QueueDelay.Sub(o.QueueDelay), Delivered: s.Delivered.Sub(o.Delivered), Sent: s.Sent.Sub(o.Sent),
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

// onWire is a packet whose transmission has begun: it counts against the
// buffer until it has left.
type onWire struct {
	depart int64
	size   int
}

// draws are the models' decisions for one packet, drawn when it arrives.
type draws struct {
	jitterNs float64
	// delayNs is the propagation delay in force when the packet arrived
	// (a timeline may change it while the packet waits in the queue);
	// jitterScale, with a timeline's jitter, the jitter's spread then.
	delayNs     int64
	jitterScale float64
	dup, reord  bool
	corrDraw    float64
	corrBit     int
	retries     int
	airtimeNs   float64
	macLost     bool
}

// Direction applies one DirectionConfig to a stream of packets. It is not
// safe for concurrent use: the engine calls it from its single loop.
type Direction struct {
	cfg       DirectionConfig
	delayNs   int64
	qdisc     Qdisc
	shaper    Shaper
	nsPerByte float64 // transmission time, for queueing-delay accounting
	// air is the constant-rate shaper when an 802.11 MAC adds airtime
	// (shared by both directions of a half-duplex link); mac draws the
	// retries.
	air *constantRate
	mac *wifiMAC

	loss   LossModel
	jitter JitterModel
	// timeline is the direction's schedule of changes (nil without
	// one); stepped holds what it changes: the Bernoulli model whose
	// rate follows it, the rate limiter whose rate does, and the queue
	// limits' defaults (timeline_direction.go).
	timeline *Schedule
	stepped  timelineParts
	// seed and name make the generators of models a live change
	// creates (live.go).
	seed     uint64
	name     string
	dupRng   *rand.Rand
	reordRng *rand.Rand
	corrRng  *rand.Rand

	// wire holds the packets being transmitted or transmitted but not
	// yet gone (the transmitter's share of the buffer), FIFO; queued the
	// bytes waiting in the discipline; txFree when the transmitter can
	// start the next packet.
	wire        []onWire
	wireBytes   int64
	queuedBytes int64
	txFree      int64
	lastRelease int64
	lastAdmit   int64
	// emit is the caller's callback during an Offer or a Transmit;
	// dropQueued, bound once, is the discipline's drop callback (no
	// closure per packet: the engine's loop makes no garbage).
	emit       Emit
	dropQueued func(Packet)

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
		seed:     seed,
		name:     name,
	}
	baseRTT := time.Duration(baseRTTNs)
	var rateBps float64
	switch {
	case cfg.Trace != "":
		if len(trace) == 0 {
			return nil, fmt.Errorf("%s: trace %s not loaded", name, cfg.Trace)
		}
		tr := newTraceRate(trace)
		if cfg.TracePhase == TracePhaseRandom {
			tr.shiftNs = rngFor(seed, name, "trace").Int64N(tr.periodNs)
		}
		d.shaper = tr
		rateBps = TraceMeanRate(trace)
	case cfg.Rate > 0:
		r := newConstantRate(cfg.Rate.BitsPerSecond())
		d.shaper, d.nsPerByte = r, r.nsPerByte
		rateBps = cfg.Rate.BitsPerSecond()
		if cfg.WiFi.Enabled() {
			d.air, d.mac = r, newWiFiMAC(cfg.WiFi, rngFor(seed, name, "wifi"))
		}
	}
	d.dropQueued = d.dropFromQueue
	rateBps = d.useTimeline(seed, name, rateBps)
	if d.shaper != nil {
		kind := qdiscKinds[cfg.Queue.Name()]
		d.qdisc = kind.New(cfg.Queue, queueLimit(cfg.QueuePackets, int64(cfg.QueueBytes), rateBps, baseRTT, kind), rngFor(seed, name, "queue"))
		d.stepped.queueRateBps, d.stepped.baseRTT, d.stepped.kind = rateBps, baseRTT, kind
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

// Offer hands the direction a frame arriving at now (ns on the link
// clock). Its verdict goes to emit, now (a loss, an outage, a full
// buffer, or at once on a link without a rate) or from a later Transmit;
// the discipline may also drop frames offered earlier. Every model draws
// once per arrival, whatever the outcome, so decisions for the k-th packet
// do not depend on what happened to earlier ones.
//
// The direction's clock never goes back: a frame stamped earlier than one
// already offered (several hosts on one side, read one socket after the
// other) is taken as arriving with it, since it is served after it anyway.
func (d *Direction) Offer(now int64, f Frame, emit Emit) {
	now = max(now, d.lastAdmit)
	d.lastAdmit = now
	d.Stats.RxPackets++
	d.Stats.RxBytes += uint64(f.Size)
	// Whatever waits to start before this arrival starts first: the
	// discipline sees arrivals and departures in time order.
	d.Transmit(now, emit)

	p := Packet{Arrived: now, Size: f.Size, Flow: f.Flow, ECN: f.ECN, Ref: f.Ref}
	p.delayNs, p.jitterScale = d.delayNs, 1
	if d.timeline != nil {
		d.arriveOnTimeline(now, &p)
	}
	var lost bool
	if tl, ok := d.loss.(timedLoss); ok {
		lost = tl.LostAt(now)
	} else {
		lost = d.loss.Lost()
	}
	if d.cfg.JitterCoherence == 0 {
		// Drawn per arrival, so that every protocol meets the same
		// packet-to-packet pattern.
		p.jitterNs = d.jitter.Sample(now) * p.jitterScale
	}
	p.dup = d.dupRng.Float64() < float64(d.cfg.Duplicate)
	p.reord = d.reordRng.Float64() < float64(d.cfg.Reorder)
	p.corrDraw = d.corrRng.Float64()
	p.corrBit = d.corrRng.IntN(max(f.Size-14, 1) * 8)
	if d.mac != nil {
		p.retries, p.airtimeNs, p.macLost = d.mac.attempt(float64(f.Size) * d.nsPerByte)
	}
	switch {
	case d.inOutage(now):
		d.drop(p, DropOutage, emit)
		return
	case lost:
		d.drop(p, DropLoss, emit)
		return
	}
	if d.shaper == nil {
		d.release(p, now, now, emit)
		return
	}
	d.drainWire(now)
	if d.qdisc.Len() == 0 {
		d.txFree = max(d.txFree, now)
	}
	backlog := Backlog{Packets: d.qdisc.Len() + len(d.wire), Bytes: d.queuedBytes + d.wireBytes}
	d.queuedBytes += int64(p.Size)
	d.emit = emit
	d.qdisc.Enqueue(now, p, backlog, d.dropQueued)
	d.Transmit(now, emit)
}

// dropFromQueue is the discipline's drop: a packet it held, or the one
// it was offered.
func (d *Direction) dropFromQueue(p Packet) {
	d.queuedBytes -= int64(p.Size)
	d.drop(p, DropQueue, d.emit)
}

// NextTransmit is when the next waiting packet starts its transmission
// (ns on the link clock), or math.MaxInt64 when none waits: the engine
// calls Transmit by then.
func (d *Direction) NextTransmit() int64 {
	if d.qdisc == nil || d.qdisc.Len() == 0 {
		return math.MaxInt64
	}
	return d.txFree
}

// Transmit starts every transmission due by now, in the discipline's
// order, each at the time the transmitter became free, and emits each
// packet's release.
func (d *Direction) Transmit(now int64, emit Emit) {
	if d.qdisc == nil {
		return
	}
	d.emit = emit
	for d.qdisc.Len() > 0 && d.txFree <= now {
		start := d.txFree
		p, ok := d.qdisc.Dequeue(start, d.dropQueued)
		if !ok {
			break
		}
		d.queuedBytes -= int64(p.Size)
		var depart int64
		if d.air != nil {
			depart = d.air.departureAfter(start, p.Size, p.airtimeNs)
			d.Stats.WiFiRetries += uint64(p.retries)
		} else {
			if d.stepped.rate != nil {
				d.rateAt(start)
			}
			depart = d.shaper.Departure(start, p.Size)
		}
		d.txFree = depart
		d.wire = append(d.wire, onWire{depart: depart, size: p.Size})
		d.wireBytes += int64(p.Size)
		wait := start - p.Arrived
		if wait > 0 {
			d.Stats.QueueDelaySumNs += uint64(wait)
			d.Stats.QueueDelayMaxNs = max(d.Stats.QueueDelayMaxNs, uint64(wait))
		}
		d.Stats.QueueDelay.Add(wait)
		d.Stats.QueuedPackets++
		if p.macLost {
			// It held the air for every attempt, then the MAC gave up.
			d.drop(p, DropRetries, emit)
			continue
		}
		d.release(p, start, depart, emit)
	}
}

// release emits a transmitted packet's release: its departure plus the
// delay and its jitter, in order unless jitter may reorder. start is when
// its transmission began.
func (d *Direction) release(p Packet, start, depart int64, emit Emit) {
	if d.cfg.JitterCoherence > 0 {
		// Jitter correlated in time belongs to when the packet meets the
		// link: the start of its transmission, after the queue.
		p.jitterNs = d.jitter.Sample(start) * p.jitterScale
	}
	release := depart + p.delayNs + int64(p.jitterNs)
	release = max(release, depart)
	if p.reord {
		// netem's reordering: this packet skips the delay line.
		release = depart
		d.Stats.Reordered++
	} else if !d.cfg.JitterReorders {
		release = max(release, d.lastRelease)
		d.lastRelease = release
	}
	d.Stats.Delivered.add(release - p.Arrived)
	d.Stats.Sent.add(release - start)
	v := Verdict{Release: release, CorruptBit: -1, Mark: p.Mark}
	if p.dup {
		v.Duplicate = true
		d.Stats.Duplicated++
	}
	if p.corrDraw < float64(d.cfg.Corrupt) && p.Size > 14 {
		v.CorruptBit = p.corrBit
		d.Stats.Corrupted++
	}
	if p.Mark {
		d.Stats.ECNMarked++
	}
	emit(p.Ref, v)
}

func (d *Direction) drop(p Packet, c DropCause, emit Emit) {
	d.Stats.count(c, p.Size)
	emit(p.Ref, Verdict{Drop: c, CorruptBit: -1})
}

// drainWire forgets packets whose transmission has ended by now.
func (d *Direction) drainWire(now int64) {
	i := 0
	for i < len(d.wire) && d.wire[i].depart <= now {
		d.wireBytes -= int64(d.wire[i].size)
		i++
	}
	if i > 0 {
		n := copy(d.wire, d.wire[i:])
		d.wire = d.wire[:n]
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
