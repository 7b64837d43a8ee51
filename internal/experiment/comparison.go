// Package experiment runs scenarios: it builds a testbed per cell, starts a
// protocol's server and client on it, drives the client with a workload,
// and turns the records and the emulator's counters into summary rows.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Comparison runs protocols against each other on one or more link
// profiles with the periodic workload.
type Comparison struct {
	// Profiles are profile stacks ("5g", "wifi+loss-ge-b"); each is a
	// network of the comparison.
	Profiles []string
	// Link overrides every profile field by field ("rate=50Mbit,...").
	Link      string
	Protocols []string
	Workload  workload.Periodic
	Settings  proto.Settings
	Seed      uint64
	// RemoveOutliers applies the 3-scaled-MAD rule to delays.
	RemoveOutliers bool
	// OutDir, when set, receives records.csv and summary.json as the
	// run goes; with Capture also pcap, TLS key log and qlog per cell.
	OutDir  string
	Capture bool
	// EmulatorMode is emu.ModeBusy (default) or emu.ModeSleep.
	EmulatorMode string
	// Progress, when set, is told what the run is doing.
	Progress func(Progress)
}

// Progress is a snapshot of a running comparison.
type Progress struct {
	Cell, Cells int
	Profile     string
	Protocol    string
	Elapsed     time.Duration
	Planned     time.Duration
	Requests    int
	LastDelayMs float64
}

// Cell is one (profile, protocol) pair.
type Cell struct {
	Profile  string
	Protocol string
}

// Cells lists the comparison's cells in the order they run.
func (c Comparison) Cells() []Cell {
	var cells []Cell
	for _, p := range c.Profiles {
		for _, pr := range c.Protocols {
			cells = append(cells, Cell{p, pr})
		}
	}
	return cells
}

// Validate checks everything that can be checked before building anything.
func (c Comparison) Validate() error {
	if len(c.Profiles) == 0 || len(c.Protocols) == 0 {
		return errors.New("need at least one profile and one protocol")
	}
	ov, err := emu.ParseOverrides(c.Link)
	if err != nil {
		return err
	}
	for _, p := range c.Profiles {
		if _, _, err := emu.ResolveLink(p, ov); err != nil {
			return err
		}
	}
	for _, p := range c.Protocols {
		if _, err := proto.Lookup(p); err != nil {
			return err
		}
	}
	if err := c.Workload.Validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return c.Settings.Validate()
}

// Run executes every cell in turn. Each summary row is passed to onRow as
// soon as its cell ends; the rows are also returned.
func (c Comparison) Run(ctx context.Context, onRow func(Summary)) ([]Summary, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var out *outputs
	if c.OutDir != "" {
		var err error
		if out, err = openOutputs(c.OutDir); err != nil {
			return nil, err
		}
		defer out.Close()
	}
	var rows []Summary
	cells := c.Cells()
	for i, cell := range cells {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		row, err := c.runCell(ctx, i, len(cells), cell, out)
		if err != nil {
			return rows, fmt.Errorf("%s over %s: %w", cell.Protocol, cell.Profile, err)
		}
		rows = append(rows, row)
		if out != nil {
			if err := out.writeSummary(rows); err != nil {
				return rows, err
			}
		}
		if onRow != nil {
			onRow(row)
		}
	}
	return rows, nil
}

// serverPort is where every protocol's server listens.
const serverPort = 4433

func (c Comparison) runCell(ctx context.Context, index, total int, cell Cell, out *outputs) (Summary, error) {
	ov, _ := emu.ParseOverrides(c.Link)
	link, _, err := emu.ResolveLink(cell.Profile, ov)
	if err != nil {
		return Summary{}, err
	}
	cellName := fmt.Sprintf("%02d-%s-%s", index+1, sanitize(cell.Profile), cell.Protocol)
	opts := testbed.Options{Seed: c.Seed, Mode: c.EmulatorMode}
	settings := c.Settings
	if c.Capture && c.OutDir != "" {
		dir := filepath.Join(c.OutDir, "captures", cellName)
		opts.CaptureDir = dir
		settings.QlogDir = filepath.Join(dir, "qlog")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Summary{}, err
		}
		kl, err := os.Create(filepath.Join(dir, "keys.log"))
		if err != nil {
			return Summary{}, err
		}
		defer kl.Close()
		settings.KeyLog = kl
	}
	tb, err := testbed.Build(testbed.ClientServer(link), opts)
	if err != nil {
		return Summary{}, err
	}
	defer tb.Close()
	ip, _ := tb.Addr("client", "server")
	if settings.Certs, err = proto.NewCertificates(ip); err != nil {
		return Summary{}, err
	}
	p, _ := proto.Lookup(cell.Protocol)
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
	w := c.Workload
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
	base := cellBase{Profile: cell.Profile, Protocol: cell.Protocol, IntervalMs: msOf(w.Interval), ReqSize: w.ReqSize, RespSize: w.RespSize, Seed: c.Seed}
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
				if c.Progress != nil {
					mu.Lock()
					n, last := len(records), lastDelay
					mu.Unlock()
					c.Progress(Progress{Cell: index + 1, Cells: total, Profile: cell.Profile, Protocol: cell.Protocol, Elapsed: time.Since(start), Planned: planned, Requests: n, LastDelayMs: last})
				}
			}
		}
	}()
	var writeErr error
	runErr := w.Run(ctx, client, func(r workload.Record) {
		mu.Lock()
		defer mu.Unlock()
		records = append(records, r)
		if r.OK() {
			lastDelay = r.DelayMs
		}
		if out != nil && writeErr == nil {
			writeErr = out.writeRecord(base, r)
		}
	})
	close(stopProgress)
	<-progressDone
	if runErr != nil {
		return Summary{}, runErr
	}
	if writeErr != nil {
		return Summary{}, writeErr
	}
	end, err := em.Stats()
	if err != nil {
		return Summary{}, err
	}
	if snapErr != nil {
		return Summary{}, snapErr
	}
	if out != nil {
		if err := out.flush(); err != nil {
			return Summary{}, err
		}
	}
	s := Summary{
		Profile: cell.Profile, Protocol: cell.Protocol, Workload: "periodic",
		IntervalMs: msOf(w.Interval), ReqSize: w.ReqSize, RespSize: w.RespSize, Seed: c.Seed,
		RTTMs:      msOf(link.BaseRTT()),
		TLSVersion: settings.TLSVersion, KeyExchange: settings.KeyExchange, Congestion: settings.Congestion,
		Resumption: settings.Resumption, ZeroRTT: settings.ZeroRTT,
		EmuReleaseP50Us: end.Lateness.P50, EmuReleaseP99Us: end.Lateness.P99,
	}
	window := end.Links[0]
	window.Up = window.Up.Sub(atWarmupEnd.Links[0].Up)
	window.Down = window.Down.Sub(atWarmupEnd.Links[0].Down)
	summarize(&s, records, window, client.Connections()-connsAtWarmupEnd, c.RemoveOutliers)
	return s, nil
}

func msOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '+' || r == ' ' || r == '.' {
			return '_'
		}
		return r
	}, s)
}

var _ io.Closer = (*outputs)(nil)
