// Package cross puts other traffic beside a cell's workload: bulk flows
// over TCP (with the chosen kernel congestion control) or QUIC, up, down
// or both, started and stopped at given times, and a constant-rate UDP
// flow. A latency-critical application rarely has its link to itself;
// what it feels on a busy link is decided by the bottleneck's queue
// (package emu's disciplines), and this is the load that fills it.
//
// Each flow's goodput is counted by its receiver in 100 ms bins and its
// own delay sampled (the sender's smoothed RTT for TCP and QUIC, the
// one-way delay of every datagram for UDP: both ends share one clock),
// written to the cell's cross.csv as it goes and summed up in the cell's
// cross_* columns. The same configuration gives every protocol of a cell
// the same load.
package cross

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/sys/unix"

	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/units"
)

// Directions of the bulk flows.
const (
	Up   = "up"   // from the client's host towards the server's (a camera's upload beside a control loop)
	Down = "down" // from the server's host towards the client's (a firmware download)
	Both = "both" // Flows each way
)

// Config is a scenario's cross: section.
type Config struct {
	// Flows is the number of bulk flows (each way, with direction both).
	Flows     int    `yaml:"flows" json:"flows,omitempty"`
	Direction string `yaml:"direction" json:"direction,omitempty"`
	// Protocol of the bulk flows: tcp (default) or quic.
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
	// CC is the kernel congestion control of TCP flows (default cubic).
	CC string `yaml:"cc" json:"cc,omitempty"`
	// Lead is how long the load runs alone before the workload starts, so
	// that the queue it builds is there from the first request (default
	// DefaultLead; 0 starts both together). Start and Stop are when the
	// load starts and stops, counted from the cell's start (Lead before
	// the workload's); a zero Stop runs it to the cell's end.
	Lead  *units.Duration `yaml:"lead" json:"lead,omitempty"`
	Start units.Duration  `yaml:"start" json:"start,omitempty"`
	Stop  units.Duration  `yaml:"stop" json:"stop,omitempty"`
	// Near is the workload role whose host the load runs from (default
	// the workload's first role: the client, the publisher, the sender),
	// across that host's link: direction up leaves it, down arrives.
	Near string `yaml:"near" json:"near,omitempty"`
	// UDPRate adds a constant-rate UDP flow in the bulk flows' direction
	// (up when both), unresponsive to loss, as a video stream.
	UDPRate units.Bitrate `yaml:"udp_rate" json:"udp_rate,omitempty"`
}

// MaxFlows bounds the bulk flows of one cell.
const MaxFlows = 64

// DefaultLead is how long the load runs before the workload by default:
// long enough for a TCP flow to fill a buffer of a few hundred ms.
const DefaultLead = 2 * time.Second

// LeadTime is the load's lead over the workload; none without a load.
func (c Config) LeadTime() time.Duration {
	switch {
	case !c.Active():
		return 0
	case c.Lead == nil:
		return DefaultLead
	}
	return c.Lead.D()
}

// Active tells whether the configuration puts any traffic on the link.
func (c Config) Active() bool { return c.Flows > 0 || c.UDPRate > 0 }

func (c Config) direction() string {
	if c.Direction == "" {
		return Up
	}
	return c.Direction
}

func (c Config) protocol() string {
	if c.Protocol == "" {
		return "tcp"
	}
	return c.Protocol
}

// Validate reports the first impossible setting, naming its field.
func (c Config) Validate() (field string, err error) {
	switch {
	case c.Flows < 0 || c.Flows > MaxFlows:
		return "flows", fmt.Errorf("cross.flows %d: want 0 to %d", c.Flows, MaxFlows)
	case !slices.Contains([]string{Up, Down, Both}, c.direction()):
		return "direction", fmt.Errorf("cross.direction %q: want up, down or both", c.Direction)
	case !slices.Contains([]string{"tcp", "quic"}, c.protocol()):
		return "protocol", fmt.Errorf("cross.protocol %q: want tcp or quic", c.Protocol)
	case c.CC != "" && c.protocol() != "tcp":
		return "cc", errors.New("cross.cc is the kernel's TCP congestion control: it applies to protocol tcp")
	case c.Start < 0:
		return "start", errors.New("cross.start must not be negative")
	case c.Lead != nil && *c.Lead < 0:
		return "lead", errors.New("cross.lead must not be negative")
	case c.Stop != 0 && c.Stop <= c.Start:
		return "stop", fmt.Errorf("cross.stop %v must come after cross.start %v", c.Stop, c.Start)
	case c.UDPRate < 0:
		return "udp_rate", errors.New("cross.udp_rate must not be negative")
	}
	if c.CC != "" {
		if err := (proto.Settings{Congestion: c.CC, TLSVersion: "1.3", KeyExchange: "x25519", MQTTVersion: "3.1.1", IdleTimeout: 1, MaxIdle: 1}).Validate(); err != nil {
			return "cc", fmt.Errorf("cross.cc: %w", err)
		}
	}
	return "", nil
}

// Endpoints are the two hosts the load runs between: the client's and
// the server's of the workload, so that it crosses the same bottleneck.
type Endpoints struct {
	Client, Server proto.Net
	// ServerAddr is the server host's address as the client reaches it.
	ServerAddr net.IP
	// Far, when set, runs the flows' far end on another machine (Server
	// is then not used): a tlab agent across a real path.
	Far FarEnd
}

// Bin is one flow's share of one 100 ms interval: bytes received, and the
// flow's delay samples in it (RTT for TCP and QUIC, one-way for UDP).
type Bin struct {
	Flow    string
	StartMs float64
	Bytes   int64
	DelayMs float64 // the interval's last sample; NaN when none
}

// FlowResult is one flow's totals over the load's lifetime.
type FlowResult struct {
	Name        string
	Bytes       int64
	GoodputMbps float64
	// DelayMs are the flow's delay samples (ms).
	DelayMs []float64
	// RTT tells whether DelayMs are round trips (TCP, QUIC) or one-way
	// delays (UDP).
	RTT bool
}

// BinWidth is the width of a goodput bin.
const BinWidth = 100 * time.Millisecond

// Run is the load of one cell, running.
type Run struct {
	cfg    Config
	start  time.Time // the workload's start: times are measured from it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    io.Writer
	far    FarEnd // the flows' far end, once served on another machine

	mu     sync.Mutex
	flows  []*flow
	closer []io.Closer
	err    error
	logErr error // the first failed write of the log
}

type flow struct {
	name    string
	rtt     bool
	bytes   int64 // received
	bin     int64 // received in the current bin
	binAt   time.Duration
	delays  []float64
	last    float64
	started time.Time
	ended   time.Time
}

// Start opens the servers of the load at once and starts its senders at
// cfg.Start after the cell's start, which is cfg.LeadTime() before start
// (the workload's start, to which every time in the bins is relative),
// until cfg.Stop or Close.
// Bins go to csv as they complete (nil: nowhere). s gives the TLS
// certificates for QUIC.
func Start(ctx context.Context, ep Endpoints, cfg Config, s proto.Settings, start time.Time, csv io.Writer) (*Run, error) {
	if _, err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Run{cfg: cfg, start: start, cancel: cancel, out: csv}
	if csv != nil {
		if _, err := io.WriteString(csv, strings.Join(LogColumns, ",")+"\n"); err != nil {
			cancel()
			return nil, fmt.Errorf("cross traffic: %w", err)
		}
	}
	if cfg.CC != "" {
		s.Congestion = cfg.CC
	}
	up, down := 0, 0
	switch cfg.direction() {
	case Up:
		up = cfg.Flows
	case Down:
		down = cfg.Flows
	case Both:
		up, down = cfg.Flows, cfg.Flows
	}
	var err error
	switch cfg.protocol() {
	case "tcp":
		err = r.startTCP(ctx, ep, s, up, down)
	case "quic":
		err = r.startQUIC(ctx, ep, s, up, down)
	}
	if err == nil && cfg.UDPRate > 0 {
		if ep.Far != nil {
			err = errNoFarUDP
		} else {
			err = r.startUDP(ctx, ep, cfg.direction() != Down)
		}
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("cross traffic: %w", err)
	}
	r.wg.Add(1)
	go r.binLoop(ctx)
	return r, nil
}

// window returns when the load should run, as a context that ends at Stop
// (or with ctx), after waiting for Start; false when ctx ended first.
func (r *Run) window(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	cellStart := r.start.Add(-r.cfg.LeadTime())
	select {
	case <-time.After(time.Until(cellStart.Add(r.cfg.Start.D()))):
	case <-ctx.Done():
		return ctx, func() {}, false
	}
	if r.cfg.Stop > 0 {
		c, cancel := context.WithDeadline(ctx, cellStart.Add(r.cfg.Stop.D()))
		return c, cancel, true
	}
	c, cancel := context.WithCancel(ctx)
	return c, cancel, true
}

// received counts n bytes arriving for f.
func (r *Run) received(f *flow, n int) {
	r.mu.Lock()
	if f.started.IsZero() {
		f.started = time.Now()
	}
	f.bytes += int64(n)
	f.bin += int64(n)
	f.ended = time.Now()
	r.mu.Unlock()
}

// sample records one delay sample (ms) for f.
func (r *Run) sample(f *flow, ms float64) {
	r.mu.Lock()
	f.delays = append(f.delays, ms)
	f.last = ms
	r.mu.Unlock()
}

func (r *Run) keep(c io.Closer) {
	r.mu.Lock()
	r.closer = append(r.closer, c)
	r.mu.Unlock()
}

func (r *Run) fail(err error) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// binLoop closes a bin every BinWidth and writes it.
func (r *Run) binLoop(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(BinWidth)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.flush()
			return
		case <-t.C:
			r.flush()
		}
	}
}

func (r *Run) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := time.Since(r.start)
	for _, f := range r.flows {
		if r.out != nil && (f.bin > 0 || !math.IsNaN(f.last)) {
			startMs := float64(f.binAt) / 1e6
			width := float64(at-f.binAt) / 1e9
			mbps := float64(f.bin) * 8 / width / 1e6
			delay := ""
			if !math.IsNaN(f.last) {
				delay = strconv.FormatFloat(f.last, 'f', 3, 64)
			}
			if _, err := fmt.Fprintf(r.out, "%.1f,%s,%d,%.3f,%s\n", startMs, f.name, f.bin, mbps, delay); err != nil && r.logErr == nil {
				// A full disk would leave cross.csv cut short in
				// silence: Close returns it.
				r.logErr = fmt.Errorf("cross traffic's log: %w", err)
			}
		}
		f.bin, f.binAt, f.last = 0, at, math.NaN()
	}
}

// Close stops the load, waits for its goroutines and returns each flow's
// totals, and the first error a flow met (a load that could not run is
// not the protocol's doing, but the cell's results would not be what
// they say).
func (r *Run) Close() ([]FlowResult, error) {
	r.cancel()
	r.mu.Lock()
	closers := r.closer
	r.closer = nil
	r.mu.Unlock()
	for _, c := range closers {
		c.Close()
	}
	r.wg.Wait()
	var farErr error
	if r.far != nil {
		// The up flows were received on the far machine: its counts, and
		// the time between its first and last byte, give their goodput.
		counts, err := r.far.Received()
		farErr = errors.Join(err, r.far.Close())
		for _, c := range counts {
			f := r.flowFor(r.cfg.protocol(), 'u', c.Index)
			r.mu.Lock()
			f.bytes = c.Bytes
			f.started, f.ended = time.Unix(0, c.FirstNs), time.Unix(0, c.LastNs)
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []FlowResult
	for _, f := range r.flows {
		fr := FlowResult{Name: f.name, Bytes: f.bytes, DelayMs: f.delays, RTT: f.rtt}
		if d := f.ended.Sub(f.started).Seconds(); d > 0 {
			fr.GoodputMbps = float64(f.bytes) * 8 / d / 1e6
		}
		out = append(out, fr)
	}
	return out, errors.Join(r.err, r.logErr, farErr)
}

// Facts sums the flows up as the cell's cross_* columns.
func Facts(cfg Config, flows []FlowResult) map[string]float64 {
	facts := map[string]float64{"cross_flows": float64(cfg.Flows)}
	var goodput float64
	var rtts, oneWay []float64
	carrying := 0
	for _, f := range flows {
		if f.RTT && f.Bytes > 0 {
			carrying++
		}
		goodput += f.GoodputMbps
		if f.RTT {
			rtts = append(rtts, f.DelayMs...)
		} else {
			oneWay = append(oneWay, f.DelayMs...)
		}
	}
	facts["cross_flows_carrying"] = float64(carrying)
	facts["cross_goodput_mbps"] = goodput
	facts["cross_rtt_p50_ms"] = metrics.QuantileOf(rtts, 0.50)
	facts["cross_rtt_p99_ms"] = metrics.QuantileOf(rtts, 0.99)
	facts["cross_udp_delay_p50_ms"] = metrics.QuantileOf(oneWay, 0.50)
	return facts
}

// FactNames are the columns Facts gives, in order.
var FactNames = []string{"cross_flows", "cross_flows_carrying", "cross_goodput_mbps", "cross_rtt_p50_ms", "cross_rtt_p99_ms", "cross_udp_delay_p50_ms"}

func init() {
	for _, m := range []metrics.Metric{
		{Name: "cross_flows", Kind: metrics.Parameter, Header: "XFLOWS",
			Definition: "Bulk flows of cross traffic beside the workload (scenario `cross.flows`; each way with `cross.direction: both`)."},
		{Name: "cross_flows_carrying", Kind: metrics.Measured, Header: "XFLOWS ON",
			Definition: "Bulk cross-traffic flows (every direction) that carried data during the cell, read from the flows themselves: fewer than `cross.flows` asks (times two with `direction: both`) means some never connected, and the load was lighter than the row's cross_flows says."},
		{Name: "cross_goodput_mbps", Kind: metrics.Measured, Unit: "Mbit/s", Header: "XGOODPUT", Precision: 2,
			Definition: "The cross traffic's goodput, summed over its flows: bytes each receiver got over the time it received them."},
		{Name: "cross_rtt_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "XRTT p50", Precision: 2,
			Definition: "Median of the cross traffic's own round-trip time, sampled every 100 ms from its senders (the kernel's smoothed RTT for TCP, quic-go's latest RTT for QUIC): the queue it builds, as it feels it."},
		{Name: "cross_rtt_p99_ms", Kind: metrics.Measured, Unit: "ms", Header: "XRTT p99", Precision: 2,
			Definition: "99th percentile of the cross traffic's own round-trip samples."},
		{Name: "cross_udp_delay_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "XUDP p50", Precision: 2,
			Definition: "Median one-way delay of the constant-rate UDP cross flow's datagrams (both ends read one clock)."},
	} {
		metrics.Register(m)
	}
}

// flowFor returns the flow named by a connection's header (direction and
// index), created by whichever end asks first.
func (r *Run) flowFor(kind string, dir byte, index int) *flow {
	name := fmt.Sprintf("%s-%s-%d", kind, map[byte]string{'u': Up, 'd': Down}[dir], index+1)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.flows {
		if f.name == name {
			return f
		}
	}
	f := &flow{name: name, rtt: kind != "udp", last: math.NaN()}
	r.flows = append(r.flows, f)
	return f
}

// senders lists the flows to open: direction byte and index.
func senders(up, down int) [][2]int {
	var out [][2]int
	for i := range up {
		out = append(out, [2]int{'u', i})
	}
	for i := range down {
		out = append(out, [2]int{'d', i})
	}
	return out
}

// bulkStream is one bulk flow's byte stream, whatever carries it: the
// server's end of the flows, its senders, its receivers and their delay
// samples are written once for TCP and QUIC.
type bulkStream struct {
	rw io.ReadWriter
	// rtt reads the transport's smoothed RTT (ms); abort unblocks a
	// Read or Write in flight when the load ends.
	rtt   func() (float64, bool)
	abort func()
}

// openBulks starts the client's end of every flow: each waits for the
// load's window, opens its stream with open, names its flow in the header
// and sends (up) or receives (down) until the window ends.
func (r *Run) openBulks(ctx context.Context, kind string, up, down int, open func(context.Context) (bulkStream, func(), error)) {
	for _, fl := range senders(up, down) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			wctx, stop, ok := r.window(ctx)
			defer stop()
			if !ok {
				return
			}
			f := r.flowFor(kind, byte(fl[0]), fl[1])
			s, closeStream, err := open(wctx)
			if err != nil {
				r.fail(fmt.Errorf("%s: %w", f.name, err))
				return
			}
			defer closeStream()
			stopAbort := context.AfterFunc(wctx, s.abort)
			defer stopAbort()
			if _, err := s.rw.Write([]byte{byte(fl[0]), byte(fl[1])}); err != nil {
				r.fail(fmt.Errorf("%s: %w", f.name, err))
				return
			}
			if fl[0] == 'u' {
				r.sendBulk(wctx, s, f)
			} else {
				r.readAll(s.rw, f)
			}
		}()
	}
}

func (r *Run) readAll(c io.Reader, f *flow) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			r.received(f, n)
		}
		if err != nil {
			return
		}
	}
}

// sendBulk writes as fast as the transport takes until ctx ends (the
// stream's abort ends a blocked write), sampling its RTT every bin for f.
func (r *Run) sendBulk(ctx context.Context, s bulkStream, f *flow) {
	r.sampleEvery(ctx, f, s.rtt)
	buf := make([]byte, 64<<10)
	for {
		if _, err := s.rw.Write(buf); err != nil {
			return
		}
	}
}

// sampleEvery samples f's delay with read every bin until ctx ends.
func (r *Run) sampleEvery(ctx context.Context, f *flow, read func() (float64, bool)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(BinWidth)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if v, ok := read(); ok {
					r.sample(f, v)
				}
			}
		}
	}()
}

// --- TCP ---

func (r *Run) startTCP(ctx context.Context, ep Endpoints, s proto.Settings, up, down int) error {
	addr, err := r.serve(ep, "tcp", s)
	if err != nil {
		return err
	}
	r.openBulks(ctx, "tcp", up, down, func(ctx context.Context) (bulkStream, func(), error) {
		c, _, err := proto.DialTCP(ctx, ep.Client, addr, s)
		if err != nil {
			return bulkStream{}, nil, err
		}
		r.keep(c)
		return tcpStream(c), func() { c.Close() }, nil
	})
	return nil
}

// serve starts the far end of kind's flows, in the server's host or on
// the far machine (ep.Far), and returns the address the client dials.
func (r *Run) serve(ep Endpoints, kind string, s proto.Settings) (string, error) {
	if ep.Far != nil {
		port, err := ep.Far.ServeBulk(kind, s)
		if err != nil {
			return "", err
		}
		r.far = ep.Far // set in Start, before any goroutine or Close reads it
		return proto.HostPort(ep.ServerAddr.String(), port), nil
	}
	srv, err := ServeBulk(ep.Server, kind, 0, s, BulkOptions{
		OnReceive: func(dir byte, index, n int) { r.received(r.flowFor(kind, dir, index), n) },
		OnSend: func(ctx context.Context, dir byte, index int, rtt func() (float64, bool)) {
			r.sampleEvery(ctx, r.flowFor(kind, dir, index), rtt)
		},
	})
	if err != nil {
		return "", err
	}
	r.keep(srv)
	return proto.HostPort(ep.ServerAddr.String(), srv.Port), nil
}

func tcpStream(c net.Conn) bulkStream {
	return bulkStream{rw: c, rtt: func() (float64, bool) { return tcpRTT(c) }, abort: func() { c.Close() }}
}

// tcpRTT reads the kernel's smoothed RTT of c, in ms.
func tcpRTT(c net.Conn) (float64, bool) {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil || info == nil || info.Rtt == 0 {
		return 0, false
	}
	return float64(info.Rtt) / 1e3, true
}

// --- QUIC ---

const crossALPN = "tlab-cross"

func (r *Run) startQUIC(ctx context.Context, ep Endpoints, s proto.Settings, up, down int) error {
	s.QlogDir = "" // the load's connections are not the measured ones
	addr, err := r.serve(ep, "quic", s)
	if err != nil {
		return err
	}
	qc, _ := proto.QUICConfig(s)
	r.openBulks(ctx, "quic", up, down, func(ctx context.Context) (bulkStream, func(), error) {
		conn, udp, err := proto.DialQUIC(ctx, ep.Client, addr, proto.QUICTLS(s.ClientTLS(crossALPN)), qc, false)
		if err != nil {
			return bulkStream{}, nil, err
		}
		closeConn := func() { conn.CloseWithError(0, ""); udp.Close() }
		st, err := conn.OpenStreamSync(ctx)
		if err != nil {
			closeConn()
			return bulkStream{}, nil, err
		}
		return quicStream(conn, st), closeConn, nil
	})
	return nil
}

func quicStream(conn *quic.Conn, st *quic.Stream) bulkStream {
	return bulkStream{rw: st,
		rtt: func() (float64, bool) {
			rtt := conn.ConnectionStats().SmoothedRTT
			return float64(rtt) / 1e6, rtt > 0
		},
		abort: func() { st.CancelWrite(0); st.CancelRead(0) }}
}

// --- UDP ---

// udpDatagram is the constant-rate flow's datagram size (payload).
const udpDatagram = 1200

// startUDP sends a constant-rate flow, up (client to server) or down,
// each datagram stamped with its send time on the run's clock.
func (r *Run) startUDP(ctx context.Context, ep Endpoints, up bool) error {
	sendNet, recvNet := ep.Client, ep.Server
	if !up {
		sendNet, recvNet = ep.Server, ep.Client
	}
	rc, err := recvNet.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return err
	}
	r.keep(rc)
	sc, err := sendNet.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return err
	}
	r.keep(sc)
	// The receiver's address as the sender reaches it: the server's for
	// an up flow; for a down flow the client's, learnt from a first
	// datagram the client sends to the server.
	var to *net.UDPAddr
	dir := byte('u')
	if up {
		to = &net.UDPAddr{IP: ep.ServerAddr, Port: rc.LocalAddr().(*net.UDPAddr).Port}
	} else {
		dir = 'd'
		hello := make([]byte, 1)
		if _, err := rc.WriteToUDP(hello, &net.UDPAddr{IP: ep.ServerAddr, Port: sc.LocalAddr().(*net.UDPAddr).Port}); err != nil {
			return err
		}
		sc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, from, err := sc.ReadFromUDP(hello)
		if err != nil {
			return fmt.Errorf("udp down flow: the client's address: %w", err)
		}
		sc.SetReadDeadline(time.Time{})
		to = from
	}
	f := r.flowFor("udp", dir, 0)
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 2048)
		for {
			n, _, err := rc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if n < 8 {
				continue
			}
			sent := time.Duration(binary.BigEndian.Uint64(buf[:8]))
			r.received(f, n)
			r.sample(f, float64(time.Since(r.start)-sent)/1e6)
		}
	}()
	go func() {
		defer r.wg.Done()
		wctx, stop, ok := r.window(ctx)
		defer stop()
		if !ok {
			return
		}
		// Paced on a 1 ms tick: each tick sends what the rate owes.
		perNs := r.cfg.UDPRate.BitsPerSecond() / 8 / 1e9
		began := time.Now()
		sent := 0
		buf := make([]byte, udpDatagram)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			owed := int(float64(time.Since(began))*perNs) / udpDatagram
			for ; sent < owed; sent++ {
				binary.BigEndian.PutUint64(buf[:8], uint64(time.Since(r.start)))
				sc.WriteToUDP(buf, to)
			}
		}
	}()
	return nil
}
