package remote

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
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
	case probeEcho, probeTrainReq, probeTrainData:
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
// a bit set by sequence number, and the trains it sent.
type ProbeReport struct {
	Received []byte `json:"received"`
	Count    int    `json:"count"`
	Trains   int    `json:"trains"`
	Refused  int    `json:"refused"`
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
	done        chan struct{}
	once        sync.Once
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
		n, from, now, err := r.conn.ReadStamped(buf)
		if err != nil {
			return
		}
		p, err := ParseProbe(buf[:n])
		if err != nil || p.Cookie != r.cookie || !from.IP.Equal(r.allowed) {
			r.mu.Lock()
			r.refused++
			r.mu.Unlock()
			continue
		}
		switch p.Kind {
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
	return ProbeReport{Received: append([]byte(nil), r.seen[:last]...), Count: r.count, Trains: r.trains, Refused: r.refused}
}

// Close stops the reflector.
func (r *reflector) Close() error {
	r.once.Do(func() { close(r.done); r.conn.Close() })
	return nil
}
