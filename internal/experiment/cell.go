package experiment

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// CellSpec is everything one cell needs: a link, a protocol, a workload and
// the settings, on a testbed of its own.
type CellSpec struct {
	// ID names the cell in outputs; Index and Total place it in its run.
	ID           string
	Index, Total int
	Profile      string
	Link         emu.LinkConfig
	Protocol     string
	Workload     workload.Periodic
	Settings     proto.Settings
	Seed         uint64
	Rep          int
	// Params are the swept fields' values, in the scenario's order.
	Params         []Param
	EmulatorMode   string
	RemoveOutliers bool
	// CaptureDir, when set, receives pcap per host interface, the TLS key
	// log and qlog files.
	CaptureDir string
}

// Param is one swept field's value.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// serverPort is where every protocol's server listens.
const serverPort = 4433

// RunCell builds a fresh testbed (so every protocol meets the same seeded
// loss and jitter pattern and starts with fresh kernel state), runs the
// protocol's server and client on it under the workload, passes each record
// to sink as it comes, and returns the cell's summary row.
func RunCell(ctx context.Context, spec CellSpec, sink func(workload.Record) error, progress func(Progress)) (Summary, error) {
	opts := testbed.Options{Seed: spec.Seed, Mode: spec.EmulatorMode}
	settings := spec.Settings
	if spec.CaptureDir != "" {
		opts.CaptureDir = spec.CaptureDir
		settings.QlogDir = filepath.Join(spec.CaptureDir, "qlog")
		if err := os.MkdirAll(spec.CaptureDir, 0o755); err != nil {
			return Summary{}, err
		}
		kl, err := os.Create(filepath.Join(spec.CaptureDir, "keys.log"))
		if err != nil {
			return Summary{}, err
		}
		defer kl.Close()
		settings.KeyLog = kl
	}
	tb, err := testbed.Build(testbed.ClientServer(spec.Link), opts)
	if err != nil {
		return Summary{}, err
	}
	defer tb.Close()
	ip, _ := tb.Addr("client", "server")
	if settings.Certs, err = proto.NewCertificates(ip); err != nil {
		return Summary{}, err
	}
	p, err := proto.Lookup(spec.Protocol)
	if err != nil {
		return Summary{}, err
	}
	srv, err := p.Serve(tb.Host("server"), serverPort, settings)
	if err != nil {
		return Summary{}, fmt.Errorf("server: %w", err)
	}
	defer srv.Close()

	em := tb.Emulator()
	var mu sync.Mutex
	var records []workload.Record
	var atWarmupEnd emu.EngineStats
	var connsAtWarmupEnd int
	var snapErr error
	w := spec.Workload
	var client proto.Client
	takeSnapshot := func() {
		s, err := em.Stats()
		conns := 0
		if client != nil {
			conns = client.Connections()
		}
		mu.Lock()
		atWarmupEnd, connsAtWarmupEnd, snapErr = s, conns, err
		mu.Unlock()
		em.ResetLateness()
	}
	w.OnWarmupEnd = takeSnapshot
	if w.Warmup < w.Interval {
		// No warm-up: the window starts before the client connects, so
		// that it holds the handshakes too.
		takeSnapshot()
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(serverPort))
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	client, err = p.NewClient(dctx, tb.Host("client"), addr, settings)
	cancel()
	if err != nil {
		return Summary{}, fmt.Errorf("client: %w", err)
	}
	defer client.Close()

	planned := w.Warmup + w.Duration
	if w.Count > 0 {
		planned = w.Warmup + time.Duration(w.Count)*w.Interval
	}
	start := time.Now()
	var lastDelay float64
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				if progress != nil {
					mu.Lock()
					n, last := len(records), lastDelay
					mu.Unlock()
					progress(Progress{Cell: spec.Index + 1, Cells: spec.Total, Profile: spec.Profile, Protocol: spec.Protocol, Elapsed: time.Since(start), Planned: planned, Requests: n, LastDelayMs: last})
				}
			}
		}
	}()
	var sinkErr error
	runErr := w.Run(ctx, client, func(r workload.Record) {
		mu.Lock()
		defer mu.Unlock()
		records = append(records, r)
		if r.OK() {
			lastDelay = r.DelayMs
		}
		if sink != nil && sinkErr == nil {
			sinkErr = sink(r)
		}
	})
	close(stopProgress)
	<-progressDone
	if runErr != nil {
		return Summary{}, runErr
	}
	if sinkErr != nil {
		return Summary{}, sinkErr
	}
	end, err := em.Stats()
	if err != nil {
		return Summary{}, err
	}
	if snapErr != nil {
		return Summary{}, snapErr
	}
	s := Summary{
		Cell: spec.ID, Profile: spec.Profile, Protocol: spec.Protocol, Workload: "periodic", Rep: spec.Rep, Params: spec.Params,
		IntervalMs: msOf(w.Interval), ReqSize: w.ReqSize, RespSize: w.RespSize, Seed: spec.Seed,
		RTTMs:      msOf(spec.Link.BaseRTT()),
		TLSVersion: settings.TLSVersion, KeyExchange: settings.KeyExchange, Congestion: settings.Congestion,
		Resumption: settings.Resumption, ZeroRTT: settings.ZeroRTT,
		EmuReleaseP50Us: end.Lateness.P50, EmuReleaseP99Us: end.Lateness.P99,
	}
	window := end.Links[0]
	window.Up = window.Up.Sub(atWarmupEnd.Links[0].Up)
	window.Down = window.Down.Sub(atWarmupEnd.Links[0].Down)
	summarize(&s, records, window, client.Connections()-connsAtWarmupEnd, spec.RemoveOutliers)
	return s, nil
}
