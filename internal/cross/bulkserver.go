package cross

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"tlab/internal/proto"
)

// A BulkServer is the far end of a load's bulk flows of one kind (tcp or
// quic): it receives the up flows, counting what each brought, and sends
// the down flows until their client closes them. A cell's load runs one
// beside its workload's server; across a real path the tlab agent runs
// one (FarEnd), bounded on its own side: how many flows, and how fast the
// down flows send together.
type BulkServer struct {
	// Port is where it listens (TCP, or QUIC's UDP).
	Port int

	o      BulkOptions
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pace   *Pacer

	mu      sync.Mutex
	counts  map[flowKey]*FlowCount
	open    int         // flows being served
	closers []io.Closer // the listeners
}

// BulkOptions bound and watch a BulkServer.
type BulkOptions struct {
	// MaxSendBps bounds what the down flows send together (0: no bound).
	MaxSendBps float64
	// Pacer, when set, is the line the down flows send on instead:
	// shared with whatever else was given it (a tlab agent's other bulk
	// servers and its probers' fills), so that they all stay within its
	// rate together. MaxSendBps is then not used.
	Pacer *Pacer
	// NoDown refuses down flows (the server only receives).
	NoDown bool
	// OnReceive, when set, is told of each read of an up flow (its
	// direction byte and index, and the bytes read).
	OnReceive func(dir byte, index, n int)
	// OnSend, when set, is told when a down flow starts sending, with a
	// way to read its transport's smoothed RTT (ms), until ctx ends.
	OnSend func(ctx context.Context, dir byte, index int, rtt func() (float64, bool))
	// HeaderTimeout is how long a new flow has to name itself (0:
	// headerTimeout, 10 s).
	HeaderTimeout time.Duration
}

// FlowCount is what a BulkServer received of one up flow: bytes, and
// when the first and last of them came (ns, on the server's clock).
type FlowCount struct {
	Direction string `json:"direction"`
	Index     int    `json:"index"`
	Bytes     int64  `json:"bytes"`
	FirstNs   int64  `json:"first_ns"`
	LastNs    int64  `json:"last_ns"`
}

type flowKey struct {
	dir   byte
	index int
}

// maxOpenFlows bounds the flows a BulkServer serves at once: a load's
// flows each way, with room for one reconnect each.
const maxOpenFlows = 4 * MaxFlows

// headerTimeout is how long a new flow has to name itself, unless
// BulkOptions.HeaderTimeout says otherwise.
const headerTimeout = 10 * time.Second

// ServeBulk starts the far end of kind's flows in n on port (0: any),
// with s's settings (QUIC's certificate). Close stops it.
func ServeBulk(n proto.Net, kind string, port int, s proto.Settings, o BulkOptions) (*BulkServer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = headerTimeout
	}
	b := &BulkServer{o: o, ctx: ctx, cancel: cancel, counts: map[flowKey]*FlowCount{}, pace: o.Pacer}
	var err error
	if b.pace == nil && o.MaxSendBps > 0 {
		if b.pace, err = NewPacer(o.MaxSendBps); err != nil {
			cancel()
			return nil, fmt.Errorf("bulk server: %w", err)
		}
	}
	switch kind {
	case "tcp":
		err = b.listenTCP(n, port, s)
	case "quic":
		err = b.listenQUIC(n, port, s)
	default:
		err = fmt.Errorf("bulk flows over %q: want tcp or quic", kind)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *BulkServer) listenTCP(n proto.Net, port int, s proto.Settings) error {
	ln, err := proto.ListenTCP(n, port, s)
	if err != nil {
		return err
	}
	b.keep(ln)
	b.Port = ln.Addr().(*net.TCPAddr).Port
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.flow(c, tcpStream(c), c.SetReadDeadline)
		}
	}()
	return nil
}

func (b *BulkServer) listenQUIC(n proto.Net, port int, s proto.Settings) error {
	s.QlogDir = "" // the load's connections are not the measured ones
	ln, udp, _, err := proto.ListenEarly(n, port, s, crossALPN)
	if err != nil {
		return err
	}
	b.keep(ln)
	b.keep(udp)
	b.Port = udp.LocalAddr().(*net.UDPAddr).Port
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			conn, err := ln.Accept(b.ctx)
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				actx, cancel := context.WithTimeout(b.ctx, b.o.HeaderTimeout)
				st, err := conn.AcceptStream(actx)
				cancel()
				if err != nil {
					conn.CloseWithError(0, "")
					return
				}
				closer := closerFunc(func() error { return conn.CloseWithError(0, "") })
				b.flow(closer, quicStream(conn, st), st.SetReadDeadline)
			}()
		}
	}()
	return nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// flow serves one flow in its own goroutine: it reads the flow's header
// (direction and index) within headerTimeout and receives (up) or sends
// (down) until the flow or the server ends. Beyond maxOpenFlows, or with
// a header it does not know, the flow is closed at once.
func (b *BulkServer) flow(c io.Closer, s bulkStream, setReadDeadline func(time.Time) error) {
	b.mu.Lock()
	if b.open >= maxOpenFlows || b.ctx.Err() != nil {
		b.mu.Unlock()
		c.Close()
		return
	}
	b.open++
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			c.Close()
			b.mu.Lock()
			b.open--
			b.mu.Unlock()
		}()
		// Close ends every flow through its abort, the header's read
		// included: the server keeps only its listeners.
		stop := context.AfterFunc(b.ctx, s.abort)
		defer stop()
		var hdr [2]byte
		setReadDeadline(time.Now().Add(b.o.HeaderTimeout))
		if _, err := io.ReadFull(s.rw, hdr[:]); err != nil {
			return
		}
		setReadDeadline(time.Time{})
		dir, index := hdr[0], int(hdr[1])
		if (dir != 'u' && dir != 'd') || index >= MaxFlows || (dir == 'd' && b.o.NoDown) {
			return
		}
		if dir == 'u' {
			b.receive(s.rw, dir, index)
			return
		}
		if b.o.OnSend != nil {
			b.o.OnSend(b.ctx, dir, index, s.rtt)
		}
		b.send(s.rw)
	}()
}

// receive reads an up flow to its end, counting it.
func (b *BulkServer) receive(r io.Reader, dir byte, index int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			now := time.Now().UnixNano()
			b.mu.Lock()
			k := flowKey{dir, index}
			c := b.counts[k]
			if c == nil {
				c = &FlowCount{Direction: Up, Index: index, FirstNs: now}
				b.counts[k] = c
			}
			c.Bytes += int64(n)
			c.LastNs = now
			b.mu.Unlock()
			if b.o.OnReceive != nil {
				b.o.OnReceive(dir, index, n)
			}
		}
		if err != nil {
			return
		}
	}
}

// send writes a down flow as fast as its transport takes, or the pacer
// allows, until it fails (the client closed it, or the server ended).
func (b *BulkServer) send(w io.Writer) {
	buf := make([]byte, 64<<10)
	for {
		chunk := buf
		if b.pace != nil {
			chunk = buf[:16<<10] // finer steps under a bound
			if !b.pace.Wait(b.ctx, len(chunk)) {
				return
			}
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// Counts returns what each up flow brought so far, in flow order.
func (b *BulkServer) Counts() []FlowCount {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]FlowCount, 0, len(b.counts))
	for i := range MaxFlows {
		if c, ok := b.counts[flowKey{'u', i}]; ok {
			out = append(out, *c)
		}
	}
	return out
}

func (b *BulkServer) keep(c io.Closer) {
	b.mu.Lock()
	b.closers = append(b.closers, c)
	b.mu.Unlock()
}

// Close stops the server and every flow, and waits for them.
func (b *BulkServer) Close() error {
	b.cancel()
	b.mu.Lock()
	closers := b.closers
	b.closers = nil
	b.mu.Unlock()
	for _, c := range closers {
		c.Close()
	}
	b.wg.Wait()
	return nil
}

// Pacer is a line of a fixed rate that senders share: each send reserves
// its bytes' time on it, after the sends before it, so that together they
// never go faster than the rate (a token bucket one send deep). A tlab
// agent gives one Pacer to everything that sends its controller a load
// (every bulk server's down flows and every path prober's fill): its
// --max-load is one budget, not one per server.
type Pacer struct {
	bps  float64
	mu   sync.Mutex
	next time.Time
}

// MinPaceBps and MaxPaceSend bound a Pacer's rate and one send: a send's
// time on the line, at most MaxPaceSend*8/MinPaceBps s (some 2.3 h), is
// always a Duration (no float that overflows to a negative time).
const (
	MinPaceBps  = 1000
	MaxPaceSend = 1 << 20
)

// NewPacer makes a line of bps bits a second, shared by whoever is given
// it.
func NewPacer(bps float64) (*Pacer, error) {
	if !(bps >= MinPaceBps) || math.IsInf(bps, 0) {
		return nil, fmt.Errorf("a send rate of %g bit/s: want at least %d and finite", bps, MinPaceBps)
	}
	return &Pacer{bps: bps}, nil
}

// Bps is the line's rate.
func (p *Pacer) Bps() float64 { return p.bps }

// Wait blocks until n more bytes may go (n is taken as MaxPaceSend when
// larger); false when ctx ended first. Bytes that were waited for and
// then not sent keep their time: the line errs on the slow side.
func (p *Pacer) Wait(ctx context.Context, n int) bool {
	n = min(max(n, 0), MaxPaceSend)
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Duration(float64(n) * 8 / p.bps * 1e9))
	p.mu.Unlock()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// FarEnd runs the far end of a load's bulk flows on another machine: a
// tlab agent across a real path (Endpoints.Far). The flows' receivers
// there count the up flows; the down flows' own RTT is the far end's and
// is not sampled.
type FarEnd interface {
	// ServeBulk starts a BulkServer for kind's flows with s's settings
	// and returns its port.
	ServeBulk(kind string, s proto.Settings) (port int, err error)
	// Received is what the far end received of each up flow.
	Received() ([]FlowCount, error)
	// Close stops it.
	Close() error
}

// errNoFarUDP refuses a constant-rate flow across a real path.
var errNoFarUDP = errors.New("a constant-rate UDP flow (cross.udp_rate) does not answer to loss: tlab does not send one across a network it does not own; use bulk flows (cross.flows), which do")
