package remote

import (
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

// Probe packets: magic, kind, sequence, a time, the agent's receive time.
const (
	probeMagic  = "TLP1"
	probeHeader = 4 + 1 + 4 + 8 + 8 // magic, kind, seq, time, agent time
	// Kinds.
	probeEcho      = 'E' // echo me, stamped
	probeTrainReq  = 'T' // send me a train: seq = packets, time = size
	probeTrainData = 'D' // a train's packet: seq = index, time = train id
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
	Seq     uint32
	TimeNs  int64 // the sender's clock (echo), a train's id, or a size
	AgentNs int64 // the agent's clock when it received (echo) or sent (train)
	// AgentSentNs is the agent's clock when it sent an echo, in echoes of
	// at least 33 bytes (0 otherwise). The agent holds a probe between
	// its arrival and the echo's departure; without this time that hold
	// would count as the way back's delay.
	AgentSentNs int64
}

// Marshal writes p into a packet of size bytes (at least the header).
func (p ProbePacket) Marshal(size int) []byte {
	b := make([]byte, max(size, probeHeader))
	copy(b, probeMagic)
	b[4] = p.Kind
	binary.BigEndian.PutUint32(b[5:], p.Seq)
	binary.BigEndian.PutUint64(b[9:], uint64(p.TimeNs))
	binary.BigEndian.PutUint64(b[17:], uint64(p.AgentNs))
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
	p := ProbePacket{Kind: b[4], Seq: binary.BigEndian.Uint32(b[5:]), TimeNs: int64(binary.BigEndian.Uint64(b[9:])), AgentNs: int64(binary.BigEndian.Uint64(b[17:]))}
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
	mu      sync.Mutex
	seen    []byte
	count   int
	trains  int
	refused int
	done    chan struct{}
	once    sync.Once
}

func startReflector(port int, allowed net.IP, life time.Duration) (*reflector, error) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	sc, err := Stamp(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	r := &reflector{conn: sc, allowed: allowed, seen: make([]byte, TrackedProbes/8), done: make(chan struct{})}
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
		if err != nil || !from.IP.Equal(r.allowed) {
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
			if count < 2 || count > MaxTrain || size < probeHeader || size > MaxProbeSize {
				continue
			}
			r.mu.Lock()
			r.trains++
			id := int64(r.trains)
			r.mu.Unlock()
			for i := 0; i < count; i++ {
				d := ProbePacket{Kind: probeTrainData, Seq: uint32(i), TimeNs: id, AgentNs: time.Now().UnixNano()}
				r.conn.WriteToUDP(d.Marshal(size), from)
			}
		}
	}
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
