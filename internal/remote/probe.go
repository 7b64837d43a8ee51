package remote

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"tlab/internal/cross"
)

// The path prober: the controller sends UDP probes to a reflector the
// agent runs for a while; the reflector stamps each on arrival and echoes
// it (never larger than it came), and on request sends a short train of
// packets back, only ever to the controller's own address. What it saw
// (which probes arrived) is fetched over the control channel at the end.

// Probe packets: magic, kind, the reflector's cookie, sequence, a time,
// the agent's receive time. The cookie is a random number the agent gives
// the controller over the control channel when it starts the reflector:
// a datagram without it is not answered, so no one who has not seen the
// controller's probes can make the reflector send anything, even with a
// forged source of the controller's own address.
const (
	probeMagic  = "TLP2"
	probeHeader = 4 + 1 + 8 + 4 + 8 + 8 // magic, kind, cookie, seq, time, agent time
	// Kinds.
	probeEcho      = 'E' // echo me, stamped
	probeTrainReq  = 'T' // send me a train: seq = packets, time = size
	probeTrainData = 'D' // a train's packet: seq = index, time = train id
	probeLoad      = 'L' // a loaded recording's packet to the agent: counted, never answered
	probeFill      = 'F' // a loaded recording's packet from the agent: seq = index, time = its send time
	// TrainsPerSecond and TrainBurst bound the trains a reflector sends
	// (one a second is what tlab record asks).
	TrainsPerSecond = 4
	TrainBurst      = 4
	// MaxProbeSeconds bounds a reflector's life; TrackedProbes the
	// sequence numbers whose arrival it keeps track of (higher ones, a
	// train's, are echoed but not tracked: the report must fit a control
	// message); MaxTrain a train's packets; MaxProbeSize a packet.
	MaxProbeSeconds = 600
	TrackedProbes   = 1 << 18
	MaxTrain        = 64
	MaxProbeSize    = 1400
	// FillsPerProber is how many of the agent's longest loads one
	// reflector may send in all (a loaded recording asks for one).
	FillsPerProber = 3
	// MinLoadBps is the slowest fill a reflector sends: below it a
	// load loads nothing (tlab record asks 1.5 times a path's measured
	// rate), and a rate near zero is a controller's mistake or a probe
	// of the agent's arithmetic.
	MinLoadBps = 10_000
	// fillWire is what a fill packet adds on the wire (Ethernet, IPv4,
	// UDP): a fill's rate counts it.
	fillWire = 42
	// probeSentEnd is where an echo's optional second agent time ends:
	// an echo of at least this size also carries when the agent sent it.
	probeSentEnd = probeHeader + 8
)

// ProbePacket is one probe as it travels.
type ProbePacket struct {
	Kind    byte
	Cookie  uint64 // the reflector's, from ProbeResult
	Seq     uint32
	TimeNs  int64 // the sender's clock (echo), a train's id, or a size
	AgentNs int64 // the agent's clock when it received (echo) or sent (train)
	// AgentSentNs is the agent's clock when it sent an echo, in echoes of
	// at least 41 bytes (0 otherwise). The agent holds a probe between
	// its arrival and the echo's departure; without this time that hold
	// would count as the way back's delay.
	AgentSentNs int64
}

// Marshal writes p into a packet of size bytes (at least the header).
func (p ProbePacket) Marshal(size int) []byte {
	b := make([]byte, max(size, probeHeader))
	copy(b, probeMagic)
	b[4] = p.Kind
	binary.BigEndian.PutUint64(b[5:], p.Cookie)
	binary.BigEndian.PutUint32(b[13:], p.Seq)
	binary.BigEndian.PutUint64(b[17:], uint64(p.TimeNs))
	binary.BigEndian.PutUint64(b[25:], uint64(p.AgentNs))
	if len(b) >= probeSentEnd {
		binary.BigEndian.PutUint64(b[probeHeader:], uint64(p.AgentSentNs))
	}
	return b
}

// ParseProbe reads a probe packet.
func ParseProbe(b []byte) (ProbePacket, error) {
	if len(b) < probeHeader || string(b[:4]) != probeMagic {
		return ProbePacket{}, errors.New("not a tlab probe")
	}
	p := ProbePacket{Kind: b[4], Cookie: binary.BigEndian.Uint64(b[5:]), Seq: binary.BigEndian.Uint32(b[13:]),
		TimeNs: int64(binary.BigEndian.Uint64(b[17:])), AgentNs: int64(binary.BigEndian.Uint64(b[25:]))}
	if len(b) >= probeSentEnd {
		p.AgentSentNs = int64(binary.BigEndian.Uint64(b[probeHeader:]))
	}
	switch p.Kind {
	case probeEcho, probeTrainReq, probeTrainData, probeLoad, probeFill:
		return p, nil
	}
	return ProbePacket{}, fmt.Errorf("probe kind %q", p.Kind)
}

// ProbeArgs asks for a reflector on Port for Seconds.
type ProbeArgs struct {
	Port    int `json:"port"`
	Seconds int `json:"seconds"`
}

// ProbeResult names the reflector started, for probe_report, and gives
// the cookie every probe to it must carry.
type ProbeResult struct {
	ID     int    `json:"id"`
	Cookie uint64 `json:"cookie"`
}

// ProbeReport is what a reflector saw: the echo probes that arrived, as
// a bit set by sequence number, the trains it sent, the load packets it
// received and the fill packets it sent.
type ProbeReport struct {
	Received []byte     `json:"received"`
	Count    int        `json:"count"`
	Trains   int        `json:"trains"`
	Refused  int        `json:"refused"`
	Load     LoadReport `json:"load"`
	Filled   int        `json:"filled"`
}

// LoadReport counts the load packets one end received: how many, their
// bytes, how many carried a CE mark, the first and last arrival (the
// receiver's clock, ns), and the bytes that arrived in each LoadBin after
// the first (at most MaxLoadBins): what crossed the path while a probe
// waited, so that the queue ahead of it is known whatever the rate did.
type LoadReport struct {
	Packets, Bytes, CE int
	FirstNs, LastNs    int64
	Bins               []int `json:"bins,omitempty"`
}

// LoadBin and MaxLoadBins: a load's arrivals in 5 ms bins, 20 s of them
// at most (a control message of some 20 kB).
const (
	LoadBin     = 5 * time.Millisecond
	MaxLoadBins = 4000
)

// Add counts one load packet of n bytes that arrived at ns with ECN ecn.
func (l *LoadReport) Add(n int, ns int64, ecn byte) {
	if l.Packets == 0 {
		l.FirstNs = ns
	}
	l.Packets++
	l.Bytes += n
	l.LastNs = ns
	if ecn == 3 {
		l.CE++
	}
	if b := (ns - l.FirstNs) / int64(LoadBin); b >= 0 && b < MaxLoadBins {
		for int64(len(l.Bins)) <= b {
			l.Bins = append(l.Bins, 0)
		}
		l.Bins[b] += n
	}
}

// BytesBetween is the load's bytes that arrived from ns a to ns b, the
// bins at the edges counted in proportion.
func (l LoadReport) BytesBetween(a, b int64) float64 {
	bin := int64(LoadBin)
	var sum float64
	for i, n := range l.Bins {
		lo := l.FirstNs + int64(i)*bin
		hi := lo + bin
		if over := min(hi, b) - max(lo, a); over > 0 {
			sum += float64(n) * float64(over) / float64(bin)
		}
	}
	return sum
}

// FillArgs asks a reflector (ID, from probe) to send the controller a
// load: RateBps for Millis, in datagrams of Size bytes, ECN-capable
// (ECT(0)), to the address its probes come from. The agent's limits bound
// the rate and the time, and a reflector runs one fill at a time.
type FillArgs struct {
	ID      int     `json:"id"`
	RateBps float64 `json:"rate_bps"`
	Millis  int     `json:"millis"`
	Size    int     `json:"size"`
}

// reflector is the agent's side of the prober.
type reflector struct {
	conn    *StampedConn
	allowed net.IP // the controller's address: trains go nowhere else
	cookie  uint64
	mu      sync.Mutex
	// trainTokens and trainAt are the train allowance's bucket.
	trainTokens float64
	trainAt     time.Time
	seen        []byte
	count       int
	trains      int
	refused     int
	load        LoadReport
	// controller is where the controller's cookie'd probes come from:
	// the only place a fill goes. filling is set while one runs, and
	// fillLeft is the fill time the reflector may still spend.
	controller   *net.UDPAddr
	filling      bool
	fillBudgeted bool
	fillLeft     time.Duration
	filled       int
	// ctx ends with done: what a fill waits on (the agent's load line).
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startReflector(n allowNet, port int, life time.Duration) (*reflector, error) {
	c, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	sc, err := Stamp(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	var cookie [8]byte
	if _, err := rand.Read(cookie[:]); err != nil {
		sc.Close()
		return nil, err
	}
	r := &reflector{conn: sc, allowed: net.IP(n.peer.AsSlice()), cookie: binary.BigEndian.Uint64(cookie[:]),
		trainTokens: TrainBurst, seen: make([]byte, TrackedProbes/8), done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.serve()
	go func() {
		select {
		case <-time.After(life):
			r.Close()
		case <-r.done:
		}
	}()
	return r, nil
}

func (r *reflector) serve() {
	buf := make([]byte, 2048)
	for {
		n, from, now, ecn, err := r.conn.ReadStampedECN(buf)
		if err != nil {
			return
		}
		p, err := ParseProbe(buf[:n])
		if err != nil || p.Cookie != r.cookie || !from.IP.Equal(r.allowed) || p.Kind == probeFill || p.Kind == probeTrainData {
			r.mu.Lock()
			r.refused++
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		r.controller = from
		r.mu.Unlock()
		switch p.Kind {
		case probeLoad:
			r.mu.Lock()
			r.load.Add(n, now, ecn)
			r.mu.Unlock()
		case probeEcho:
			if p.Seq < TrackedProbes {
				r.mu.Lock()
				if r.seen[p.Seq/8]&(1<<(p.Seq%8)) == 0 {
					r.count++
				}
				r.seen[p.Seq/8] |= 1 << (p.Seq % 8)
				r.mu.Unlock()
			}
			p.AgentNs = now
			p.AgentSentNs = time.Now().UnixNano()
			r.conn.WriteToUDP(p.Marshal(n), from) // never larger than it came
		case probeTrainReq:
			count, size := int(p.Seq), int(p.TimeNs)
			if count < 2 || count > MaxTrain || size < probeHeader || size > MaxProbeSize || !r.takeTrain(time.Now()) {
				r.mu.Lock()
				r.refused++
				r.mu.Unlock()
				continue
			}
			r.mu.Lock()
			r.trains++
			id := int64(r.trains)
			r.mu.Unlock()
			for i := 0; i < count; i++ {
				d := ProbePacket{Kind: probeTrainData, Cookie: r.cookie, Seq: uint32(i), TimeNs: id, AgentNs: time.Now().UnixNano()}
				r.conn.WriteToUDP(d.Marshal(size), from)
			}
		}
	}
}

// takeTrain spends one train of the allowance (TrainsPerSecond, at most
// TrainBurst at once), or says there is none left.
func (r *reflector) takeTrain(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.trainAt.IsZero() {
		r.trainTokens = min(TrainBurst, r.trainTokens+now.Sub(r.trainAt).Seconds()*TrainsPerSecond)
	}
	r.trainAt = now
	if r.trainTokens < 1 {
		return false
	}
	r.trainTokens--
	return true
}

func (r *reflector) report() ProbeReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := len(r.seen)
	for last > 0 && r.seen[last-1] == 0 {
		last--
	}
	return ProbeReport{Received: append([]byte(nil), r.seen[:last]...), Count: r.count, Trains: r.trains, Refused: r.refused, Load: r.load, Filled: r.filled}
}

// fill sends the controller a paced load, within the limits: at most the
// agent's load line's rate, shared with everything else that sends a load
// (line), and maxTime per fill, one at a time, and no more fill time in
// all than the reflector was given. It returns once the fill has begun.
//
// The fill is a count of packets (the rate's share of the time), each
// sent at its place between the start and the fill's end and only once
// the agent's line has room for it; whatever the line has not let go by
// the end is not sent. No time is derived from the rate alone: a rate
// near zero is refused, never turned into a gap of no length.
func (r *reflector) fill(a FillArgs, line *cross.Pacer, maxTime time.Duration) error {
	r.mu.Lock()
	if !r.fillBudgeted {
		r.fillLeft, r.fillBudgeted = FillsPerProber*maxTime, true
	}
	r.mu.Unlock()
	if line == nil {
		return errors.New("refused: this agent sends no load (--max-load 0)")
	}
	maxBps := line.Bps()
	d := time.Duration(a.Millis) * time.Millisecond
	switch {
	case !(a.RateBps >= MinLoadBps && a.RateBps <= maxBps):
		return fmt.Errorf("refused: a load of %g bit/s: want at least %d and at most %.0f (the agent's --max-load)", a.RateBps, MinLoadBps, maxBps)
	case d <= 0 || d > maxTime:
		return fmt.Errorf("refused: a load for %v: want up to %v", d, maxTime)
	case a.Size < probeHeader || a.Size > MaxProbeSize:
		return fmt.Errorf("refused: load packets of %d bytes: want %d to %d", a.Size, probeHeader, MaxProbeSize)
	}
	// Both factors are bounded above (the line's rate, maxTime), so the
	// count is a finite float before it is an int.
	packets := int(math.Floor(a.RateBps * d.Seconds() / float64((a.Size+fillWire)*8)))
	if packets < 1 {
		return fmt.Errorf("refused: a load of %g bit/s for %v is not one packet of %d bytes: want at least %.0f bit/s", a.RateBps, d, a.Size,
			math.Ceil(float64((a.Size+fillWire)*8)/d.Seconds()))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.controller == nil:
		return errors.New("refused: no probe from the controller yet, so no address to send a load to")
	case r.filling:
		return errors.New("refused: a load is running already")
	case d > r.fillLeft:
		return fmt.Errorf("refused: a load for %v: this prober has %v of load left", d, r.fillLeft)
	}
	r.filling, r.fillLeft = true, r.fillLeft-d
	to := *r.controller
	go func() {
		defer func() {
			r.mu.Lock()
			r.filling = false
			r.mu.Unlock()
		}()
		start := time.Now()
		end := start.Add(d)
		for i := range packets {
			// Packet i's place, a fraction of d: never beyond it.
			at := start.Add(time.Duration(float64(d) * float64(i) / float64(packets)))
			if w := time.Until(at); w > 0 {
				select {
				case <-time.After(w):
				case <-r.done:
					return
				}
			}
			if !line.Wait(r.ctx, a.Size+fillWire) || time.Now().After(end) {
				return
			}
			pkt := ProbePacket{Kind: probeFill, Cookie: r.cookie, Seq: uint32(i), TimeNs: time.Now().UnixNano()}.Marshal(a.Size)
			if r.conn.WriteECN(pkt, &to, 2) != nil {
				return
			}
			r.mu.Lock()
			r.filled++
			r.mu.Unlock()
		}
	}()
	return nil
}

// Close stops the reflector.
func (r *reflector) Close() error {
	r.once.Do(func() { r.cancel(); close(r.done); r.conn.Close() })
	return nil
}
