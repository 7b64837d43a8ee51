package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// Frames is study E's mobile AR offload: a camera frame every 1/FPS s from
// client to server, open loop, each answered by a small result (a few
// bounding boxes) after an optional processing time. A frame is Size bytes
// (an 8-bit grayscale image). One record per frame: its round trip (first
// byte sent to result received), one-way delay and whether it was lost or
// missed its deadline (the result arrived after the next frame was due).
// Packet-level figures (one-way delay and RFC 3550 jitter of every
// datagram, datagram loss) are computed from both ends' views: client and
// server share one clock in the testbed, so one-way delay is exact, which
// a real deployment cannot measure.
type Frames struct {
	FPS        float64
	Size       int
	ResultSize int
	Processing time.Duration
	Reassembly time.Duration
	Count      int
	Duration   time.Duration
	Warmup     time.Duration
}

func init() {
	Register(Type{
		Name:    "frames",
		Summary: "study E's AR offload: a camera frame every 1/fps s, open loop, each answered by a small result",
		Params: []Param{
			{"fps", "30", "frames per second"},
			{"size", "36.9KB", "frame bytes; or give resolution"},
			{"resolution", "", "WxH of an 8-bit grayscale frame (e.g. 256x144): the size follows"},
			{"result_size", "150", "result bytes (a few bounding boxes)"},
			{"processing", "0s", "the server's time per frame before it answers (serial, as one detector)"},
			{"reassembly_timeout", "500ms", "how long a datagram transport's server waits for a frame's missing fragments"},
		},
		Decode: decodeFrames,
	})
	for _, m := range []metrics.Metric{
		{Name: "frames", Kind: metrics.Measured, Header: "FRAMES", Definition: "Measured frames sent (after the warm-up).",
			Compute: func(in *metrics.Input) float64 { return float64(len(in.Records)) }},
		{Name: "frames_lost_pct", Kind: metrics.Measured, Unit: "%", Header: "LOST %", Precision: 1,
			Definition: "Frames whose result never came (lost on the way, given up by the server's reassembly, or never sent by a stream still blocked when the cell ended), per frame of the schedule.",
			Compute: func(in *metrics.Input) float64 {
				lost := 0
				for _, r := range in.Records {
					if !r.OK() {
						lost++
					}
				}
				return ratioPct(lost, len(in.Records))
			}},
		{Name: "frame_rtt_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "RTT P50 ms", Precision: 2,
			Definition: "Median frame round trip: from the frame's first byte sent to its result received (tlab's per-frame figure; study E's RTT is packet level, pkt_rtt_mean_ms). A frame whose result never came counts as beyond any bound (`inf` when the percentile falls among them).", Compute: delayQ(0.5)},
		{Name: "frame_rtt_p95_ms", Kind: metrics.Measured, Unit: "ms", Header: "RTT P95 ms", Precision: 2, Definition: "95th percentile of the frame round trip.", Compute: delayQ(0.95)},
		{Name: "frame_rtt_p99_ms", Kind: metrics.Measured, Unit: "ms", Header: "RTT P99 ms", Precision: 2, Definition: "99th percentile of the frame round trip.", Compute: delayQ(0.99)},
		{Name: "frame_rtt_mean_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "RTT MEAN ms", Precision: 2, Definition: "Mean frame round trip of the frames whose result came (`frames_lost_pct` counts the others).",
			Compute: func(in *metrics.Input) float64 { return in.DelayDistribution().Mean }},
		{Name: "owd_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "OWD P50 ms", Precision: 2,
			Definition: "Median one-way delay client to server of every datagram that arrived (for tcp and quic-streams, of every frame: first byte sent to last byte read); exact, on the testbed's one clock."},
		{Name: "owd_p99_ms", Kind: metrics.Measured, Unit: "ms", Header: "OWD P99 ms", Precision: 2, Definition: "99th percentile of that one-way delay."},
		{Name: "owd_offset_uncertainty_ms", Kind: metrics.Measured, Unit: "ms", Header: "OWD ± ms", Precision: 2,
			Definition: "How far the one-way delays (owd_*) may be off: 0 on an emulated link (both ends on one clock); across a real path they read two clocks, corrected by the agent's offset measured at the run's start, and are known within ± half its smallest round trip (the jitter, a difference of one-way delays, is not affected)."},
		{Name: "jitter_rfc3550_ms", Kind: metrics.Measured, Unit: "ms", Header: "JITTER ms", Precision: 3,
			Definition: "RFC 3550's interarrival jitter client to server, J += (|D| − J)/16 over the datagrams in arrival order, D the difference of consecutive one-way delays (frames for stream transports); its final value, so the last few arrivals' (pkt_jitter_ms is the run's, every packet, every transport)."},
		{Name: "packets_lost_pct", Kind: metrics.Measured, Unit: "%", Header: "PKT LOST %", Precision: 2,
			Definition: "Datagrams sent that never reached the server, per datagram sent (0 for stream transports, which retransmit)."},
		{Name: "throughput_mbps", Kind: metrics.Measured, Unit: "Mbit/s", Header: "Mbit/s", Precision: 2,
			Definition: "Client-to-server throughput: every byte the link delivered towards the server over the measured window (Ethernet frames), per second.",
			Compute: func(in *metrics.Input) float64 {
				s := in.Fact("window_s")
				if !(s > 0) {
					return math.NaN()
				}
				return in.Bytes(in.Up.TxBytes) * 8 / s / 1e6
			}},
	} {
		metrics.Register(m)
	}
}

func delayQ(q float64) func(*metrics.Input) float64 {
	return func(in *metrics.Input) float64 { return in.DelayQuantile(q) }
}

func ratioPct(n, of int) float64 {
	if of == 0 {
		return math.NaN()
	}
	return float64(n) * 100 / float64(of)
}

type framesParams struct {
	FPS        float64        `yaml:"fps"`
	Size       units.Size     `yaml:"size"`
	Resolution string         `yaml:"resolution"`
	ResultSize units.Size     `yaml:"result_size"`
	Processing units.Duration `yaml:"processing"`
	Reassembly units.Duration `yaml:"reassembly_timeout"`
}

func decodeFrames(file string, node *yaml.Node, c Common) (Workload, error) {
	prm := framesParams{FPS: 30, Size: 36864, ResultSize: 150, Reassembly: units.Duration(500 * time.Millisecond)}
	if err := strictyaml.Decode(file, node, &prm); err != nil {
		return nil, err
	}
	f := Frames{FPS: prm.FPS, Size: int(prm.Size), ResultSize: int(prm.ResultSize), Processing: prm.Processing.D(), Reassembly: prm.Reassembly.D(),
		Count: c.Count, Duration: c.Duration, Warmup: c.Warmup}
	if prm.Resolution != "" {
		w, h, ok := strings.Cut(strings.ToLower(prm.Resolution), "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || wi < 1 || hi < 1 {
			return nil, strictyaml.ErrorAt(file, node, "resolution", "workload.resolution %q: want WxH, such as 256x144", prm.Resolution)
		}
		f.Size = wi * hi
	}
	switch {
	case !(f.FPS > 0 && f.FPS <= proto.MaxFPS):
		return nil, strictyaml.ErrorAt(file, node, "fps", "workload.fps %g: want more than 0 and at most %d", f.FPS, proto.MaxFPS)
	case f.Size < 8 || f.Size > 16<<20:
		return nil, strictyaml.ErrorAt(file, node, "size", "workload.size %d B: want 8 B to 16 MiB", f.Size)
	case f.ResultSize < proto.MinResultSize || f.ResultSize > proto.MaxResultSize:
		return nil, strictyaml.ErrorAt(file, node, "result_size", "workload.result_size %d B: want %d to %d B (one datagram)", f.ResultSize, proto.MinResultSize, proto.MaxResultSize)
	case f.Reassembly < proto.MinReassemblyTimeout || f.Reassembly > proto.MaxReassemblyTimeout:
		return nil, strictyaml.ErrorAt(file, node, "reassembly_timeout", "workload.reassembly_timeout %v: want %v to %v", f.Reassembly, proto.MinReassemblyTimeout, proto.MaxReassemblyTimeout)
	case f.Count <= 0 && f.Duration <= 0:
		return nil, strictyaml.ErrorAt(file, node, "", "frames: give count (frames per cell) or duration")
	}
	return f, nil
}

func (f Frames) interval() time.Duration { return time.Duration(float64(time.Second) / f.FPS) }

func (f Frames) slots() (warm, total int) {
	warm = int(f.Warmup / f.interval())
	if f.Count > 0 {
		return warm, warm + f.Count
	}
	return warm, warm + int(f.Duration/f.interval())
}

// grace is how long after the last frame the cell waits for results.
func (f Frames) grace() time.Duration { return max(2*time.Second, 2*f.Reassembly) }

// Info describes the configured stream.
func (f Frames) Info() Info {
	_, n := f.slots()
	return Info{
		Type:    "frames",
		Planned: time.Duration(n)*f.interval() + f.grace(),
		Records: n,
		Key:     []results.Field{{Name: "frame_bytes", Value: float64(f.Size)}, {Name: "fps", Value: f.FPS}},
		Roles:   ClientServerRoles,
		Needs:   proto.CapFrames,
		Metrics: []string{"frames", "frames_lost_pct", "failed_pct", "frame_rtt_p50_ms", "frame_rtt_p95_ms", "frame_rtt_p99_ms", "frame_rtt_mean_ms",
			"delay_p50_ci_low_ms", "delay_p50_ci_high_ms", "delay_p95_ci_low_ms", "delay_p95_ci_high_ms", "deadline_miss_pct", "owd_p50_ms", "owd_p99_ms", "owd_offset_uncertainty_ms", "jitter_rfc3550_ms",
			"pkt_owd_mean_ms", "pkt_owd_p50_ms", "pkt_owd_p99_ms", "pkt_owd_std_ms", "pkt_jitter_ms", "pkt_rtt_mean_ms", "pkt_owd_queued_mean_ms", "pkt_owd_queued_p99_ms", "packets_lost_pct", "throughput_mbps", "late_sends"},
		Table:    []string{"frames", "frames_lost_pct", "frame_rtt_p50_ms", "frame_rtt_p99_ms", "deadline_miss_pct", "pkt_rtt_mean_ms", "pkt_owd_p50_ms", "pkt_owd_std_ms", "packets_lost_pct", "throughput_mbps"},
		Columns:  []string{"owd_ms", "packets_sent", "packets_arrived", "deadline_miss"},
		Plots:    []string{"pkt_rtt_by_size", "rtt_by_size", "pkt_owd_by_size", "jitter_by_size", "throughput_by_size", "rtt_shift_heatmap", "rtt_location", "delay_cdf", "delay_ccdf"},
		Describe: fmt.Sprintf("Frames of %d B at %g Hz, open loop, a %d B result each", f.Size, f.FPS, f.ResultSize),
		Offered:  Offered{UpBps: float64(f.Size) * 8 * f.FPS, DownBps: float64(f.ResultSize) * 8 * f.FPS, UpParam: "size", DownParam: "result_size", UpMessage: f.Size, DownMessage: f.ResultSize},
	}
}

// frameLedger joins what the client sent and the server received, by
// frame and by datagram hash, on the one clock of the testbed.
type frameLedger struct {
	mu       sync.Mutex
	sent     map[uint64]time.Time // datagram hash -> send time
	frameOf  map[uint64]uint32
	arrivals []proto.Packet // in arrival order
	server   map[uint32]proto.FrameArrival
}

// serve asks the server's host for the frame server, whose arrivals go
// into the ledger: as they come from a server in this process, all at
// once (on this clock) when a server on another machine is closed.
func (f Frames) serve(env *Env, opts proto.FrameOptions, led *frameLedger) (io.Closer, error) {
	return serve(env, "server", ServerFrames, ServerRequest{Protocol: env.Protocol, Port: env.Port(ServerPort), Settings: env.Settings,
		Frames: &FrameRequest{Options: opts, ResultSize: f.ResultSize, Processing: f.Processing, Sink: ledgerSink{env, led}}})
}

// ledgerSink hears the frame server for the ledger.
type ledgerSink struct {
	env *Env
	led *frameLedger
}

func (s ledgerSink) ClockUncertainty(ms float64) { s.env.Note("owd_offset_uncertainty_ms", ms) }

func (s ledgerSink) Frame(a proto.FrameArrival) {
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	s.led.server[a.ID] = a
	s.led.arrivals = append(s.led.arrivals, a.Packets...)
}

// Arrived takes a remote server's frames, in the order it sent them:
// their datagrams are put in arrival order.
func (s ledgerSink) Arrived(all []proto.FrameArrival) {
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for _, a := range all {
		s.led.server[a.ID] = a
		s.led.arrivals = append(s.led.arrivals, a.Packets...)
	}
	slices.SortStableFunc(s.led.arrivals, func(a, b proto.Packet) int { return a.At.Compare(b.At) })
}

// Run streams the frames on a client-server cell.
func (f Frames) Run(ctx context.Context, env *Env) error {
	ft, ok := proto.As[proto.FrameTransport](env.Protocol)
	if !ok {
		return fmt.Errorf("frames: %w", proto.Require(env.Protocol.Name, proto.CapFrames))
	}
	opts := proto.FrameOptions{FPS: f.FPS, ReassemblyTimeout: f.Reassembly}
	led := &frameLedger{sent: map[uint64]time.Time{}, frameOf: map[uint64]uint32{}, server: map[uint32]proto.FrameArrival{}}
	srv, err := f.serve(env, opts, led)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	closeServer := sync.OnceValue(srv.Close)
	defer closeServer()
	ip, err := env.Hosts.Addr("client", "server")
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	client, err := ft.DialFrames(dctx, env.Hosts.Net("client"), net.JoinHostPort(ip.String(), strconv.Itoa(env.Port(ServerPort))), env.Settings, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	closeClient := sync.OnceValue(client.Close)
	defer closeClient()

	warm, n := f.slots()
	if warm == 0 {
		env.StartWindow()
	}
	clock, err := newClock()
	if err != nil {
		return err
	}
	sentFrames := make([]sentFrame, n)
	resultAt := map[uint32]time.Duration{}
	var resMu sync.Mutex
	resultsDone := make(chan struct{})
	go func() {
		defer close(resultsDone)
		for r := range client.Results() {
			resMu.Lock()
			if _, dup := resultAt[r.ID]; !dup {
				resultAt[r.ID] = clock.at(r.At)
			}
			resMu.Unlock()
		}
	}()
	// The schedule runs on the precise clock; a sender goroutine sends, so
	// that a transport that blocks (TCP's back-pressure) delays its own
	// frames (recorded as lateness), never the schedule.
	due := make(chan int, n)
	var sendWG sync.WaitGroup
	sendWG.Add(1)
	go func() {
		defer sendWG.Done()
		for id := range due {
			payload := framePayload(uint32(id), f.Size)
			sf := &sentFrames[id]
			sf.sent = clock.since()
			pkts, err := client.Send(uint32(id), payload)
			sf.err, sf.packets = err, len(pkts)
			led.mu.Lock()
			for _, p := range pkts {
				led.sent[p.Hash] = p.At
				led.frameOf[p.Hash] = uint32(id)
			}
			led.mu.Unlock()
		}
	}()
	schedErr := clock.run(func() error {
		for id := 0; id < n; id++ {
			if id == warm && warm > 0 {
				if err := clock.sleepUntil(ctx, time.Duration(id)*f.interval()-f.interval()/2); err != nil {
					return err
				}
				env.StartWindow()
			}
			if err := clock.sleepUntil(ctx, time.Duration(id)*f.interval()); err != nil {
				return err
			}
			sentFrames[id].scheduled = time.Duration(id) * f.interval()
			due <- id
		}
		return nil
	})
	close(due)
	if schedErr != nil && !errors.Is(schedErr, context.Canceled) {
		closeServer()
		closeClient()
		sendWG.Wait()
		return schedErr
	}
	// Results still on their way get a grace period, then the cell ends on
	// time whatever the link does: closing the transports unblocks a send
	// stuck behind a full socket buffer (a stream during an outage), and
	// the frames it had not sent are recorded as such.
	deadline := time.Now().Add(f.grace())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resMu.Lock()
		got := len(resultAt)
		resMu.Unlock()
		if got >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Stop the transports so that no late packet races the accounting.
	closeServer()
	closeClient()
	sendWG.Wait()
	<-resultsDone

	led.mu.Lock()
	records, notes := f.account(led, sentFrames, resultAt, warm)
	led.mu.Unlock()
	for _, r := range records {
		r.SentUnixNs = clock.unixNs(sentFrames[r.Seq].sent)
		env.Emit(r)
	}
	for _, k := range slices.Sorted(maps.Keys(notes)) {
		env.Note(k, notes[k])
	}
	return ctx.Err()
}

// sentFrame is what the client did with one frame: when it was due and
// sent, how many packets it became, and why it could not be sent.
type sentFrame struct {
	scheduled, sent time.Duration
	packets         int
	err             error
}

// account turns what both ends saw of a cell's frames into a record per
// frame and the cell's figures (one-way delay quantiles, RFC 3550 jitter,
// packet loss, the measured window), from the ledger of packets sent and
// arrived, each frame's sending, and the times its results came back
// (on the cell's clock). Frames before warm are warm-up. It is pure: the
// tests give it made-up ledgers.
func (f Frames) account(led *frameLedger, sentFrames []sentFrame, resultAt map[uint32]time.Duration, warm int) ([]results.Record, map[string]float64) {
	n := len(sentFrames)
	owds := map[uint32][]float64{}
	var measuredOWD []float64
	var jitter, lastTransit float64
	first := true
	arrived := map[uint64]bool{}
	for _, p := range led.arrivals {
		sentAt, ok := led.sent[p.Hash]
		if !ok || arrived[p.Hash] {
			continue
		}
		arrived[p.Hash] = true
		id := led.frameOf[p.Hash]
		transit := ms(p.At.Sub(sentAt))
		owds[id] = append(owds[id], transit)
		if int(id) < warm {
			continue
		}
		measuredOWD = append(measuredOWD, transit)
		if !first {
			jitter += (math.Abs(transit-lastTransit) - jitter) / 16
		}
		lastTransit, first = transit, false
	}
	sentPkts, lostPkts := 0, 0
	for h, id := range led.frameOf {
		if int(id) >= warm {
			sentPkts++
			if !arrived[h] {
				lostPkts++
			}
		}
	}
	records := make([]results.Record, 0, n)
	for id := 0; id < n; id++ {
		sf := sentFrames[id]
		r := results.Record{Seq: id, Warmup: id < warm, ScheduledMs: ms(sf.scheduled), SentMs: ms(sf.sent),
			LatenessMs: ms(max(sf.sent-sf.scheduled, 0)), ReqBytes: f.Size, ConnID: 1,
			Extra: map[string]float64{"packets_sent": float64(sf.packets), "packets_arrived": float64(len(owds[uint32(id)]))}}
		if o := owds[uint32(id)]; len(o) > 0 {
			r.Extra["owd_ms"] = slices.Max(o)
		}
		at, got := resultAt[uint32(id)]
		switch {
		case sf.err != nil && sf.packets == 0:
			r.Error = "not sent: the transport was blocked or closed when the cell ended: " + sf.err.Error()
			r.Unsent = true
		case !got:
			a, reached := led.server[uint32(id)]
			switch {
			case !reached:
				r.Error = "lost: no packet of the frame reached the server"
			case !a.Complete:
				r.Error = fmt.Sprintf("lost: the server got %d of %d bytes before its reassembly timeout", a.Bytes, f.Size)
			default:
				r.Error = "lost: the result did not come back"
			}
		default:
			r.DoneMs, r.RespBytes = ms(at), f.ResultSize
			r.DelayMs = ms(at - sf.sent)
			miss := 0.0
			if at > sf.scheduled+f.interval() {
				miss = 1
			}
			r.Extra["deadline_miss"] = miss
		}
		records = append(records, r)
	}
	slices.Sort(measuredOWD)
	// Throughput is over the schedule (the frames sent in the measured
	// window, one interval each), not the grace period after it.
	return records, map[string]float64{
		"owd_p50_ms":        metrics.Quantile(measuredOWD, 0.5),
		"owd_p99_ms":        metrics.Quantile(measuredOWD, 0.99),
		"jitter_rfc3550_ms": jitter,
		"packets_lost_pct":  ratioPct(lostPkts, sentPkts),
		"window_s":          (time.Duration(n-warm) * f.interval()).Seconds(),
	}
}

// framePayload is frame id's content: pseudo-random bytes seeded by the
// id, so that no two datagrams of a run are alike (they are told apart by
// their hash) and the content is the same for every protocol.
func framePayload(id uint32, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(id), 0x6672616d65))
	b := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := size &^ 7; i < size; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}
