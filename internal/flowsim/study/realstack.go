package study

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"tlab/internal/cellrun"
	"tlab/internal/emu"
	"tlab/internal/flowsim"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/qlogflow"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/units"
	"tlab/internal/workload"
)

// FlowControlSpec is study C's question on a real stack: the streams, data
// sizes and windows of a flowsim configuration, carried by quic-go (one
// stream per download, "quic-streams") through an emulated link with the
// simulator's rate, one-way delay and loss.
type FlowControlSpec struct {
	Config flowsim.Config
	// Static fixes quic-go's windows at their initial sizes (maximum =
	// initial); otherwise quic-go auto-tunes them up to the configuration's
	// upper bounds.
	Static bool
	Seed   uint64
	// Dir receives the qlog files of both ends (qlog/) and the per-stream
	// records (records-NAME.csv).
	Dir      string
	Emulator emu.EngineOptions
}

// Name is the setting's name in tables and plots: "quic-go static" or
// "quic-go autotuning".
func (s FlowControlSpec) Name() string {
	if s.Static {
		return "quic-go static"
	}
	return "quic-go autotuning"
}

// Settings are quic-go's windows for the spec.
func (s FlowControlSpec) Settings() proto.Settings {
	set := proto.DefaultSettings()
	c := s.Config
	set.StreamWindow, set.StreamWindowMax = units.Size(c.StreamWindow), units.Size(c.StreamUpper)
	set.ConnWindow, set.ConnWindowMax = units.Size(c.ConnWindow), units.Size(c.ConnUpper)
	if s.Static {
		set.StreamWindowMax, set.ConnWindowMax = set.StreamWindow, set.ConnWindow
	}
	return set
}

// Link is the emulated link: the simulator's rate and delay both ways, its
// random loss on the data direction (server to client) only, and the
// emulator's default drop-tail queue of one bandwidth-delay product.
func (s FlowControlSpec) Link() emu.LinkConfig {
	c := s.Config
	d := emu.DirectionConfig{Delay: units.Duration(c.OneWay), Rate: units.Bitrate(c.Rate)}
	l := emu.LinkConfig{Up: d, Down: d}
	if c.Loss > 0 {
		l.Down.Loss = emu.LossConfig{Model: emu.LossBernoulli, Rate: units.Ratio(c.Loss)}
	}
	return l
}

// FlowControlRun is what one real transfer measured.
type FlowControlRun struct {
	// Result has the simulator's summary fields and time series, measured:
	// throughput and completion from the application's reads, windows and
	// updates from the client's qlog.
	Result flowsim.Result
	// Records has one row per stream.
	Records []results.Record
	// StreamUpdates and ConnUpdates count the MAX_STREAM_DATA and MAX_DATA
	// frames the client sent; Blocked the STREAM_DATA_BLOCKED and
	// DATA_BLOCKED frames the server sent.
	StreamUpdates, ConnUpdates, Blocked int
	// Link is what the emulator counted in each direction.
	Link emu.LinkStats
	// EmuReleaseP99Us is the emulator's own release error (p99) during
	// the transfer.
	EmuReleaseP99Us float64
}

// RunFlowControl runs one transfer as a compiled cell (plan.Cell, its
// spec made by cellrun.SpecOf) through RunCell: the bulk workload over
// quic-streams on a fresh client-server testbed. So that its times line up
// with the simulator's, whose sender starts at time zero, the result's
// time zero is when the requests reach the server: the client sends them
// (after the handshake) one one-way delay earlier. The records keep the
// application's own clock, from the sending of the requests.
func RunFlowControl(ctx context.Context, spec FlowControlSpec) (FlowControlRun, error) {
	cfg := spec.Config
	if err := cfg.Validate(); err != nil {
		return FlowControlRun{}, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	if spec.Dir == "" {
		return FlowControlRun{}, errors.New("flow control run: no output directory")
	}
	settings := spec.Settings()
	qlogDir := filepath.Join(spec.Dir, "qlog", results.SafeName(cfg.Name+"-"+spec.Name()))
	if err := os.RemoveAll(qlogDir); err != nil {
		return FlowControlRun{}, err
	}
	settings.QlogDir = qlogDir
	if err := settings.Validate(); err != nil {
		return FlowControlRun{}, err
	}
	w := workload.Bulk{Streams: cfg.Streams, Bytes: int(cfg.BytesPerStream)}
	// A compiled cell of its own (no scenario: the link is the
	// simulator's, not a profile's), run as a sweep runs its cells.
	cell := plan.Cell{
		ID: results.SafeName(cfg.Name + "-" + spec.Name()), Profile: "flowsim", Protocol: "quic-streams", Rep: 1, Seed: spec.Seed,
		Topology: testbed.ClientServer(spec.Link()), Roles: map[string]string{"client": "client", "server": "server"},
		Workload: w, Settings: settings, Emulator: spec.Emulator,
	}
	res, err := cellrun.RunCell(ctx, cellrun.SpecOf(cell, 1), nil, nil)
	if err != nil {
		return FlowControlRun{}, err
	}
	run := FlowControlRun{Records: res.Records, Link: res.Links["path"], EmuReleaseP99Us: res.Release.P99}
	files, err := filepath.Glob(filepath.Join(qlogDir, "*_client.sqlog"))
	if err != nil || len(files) != 1 {
		return run, fmt.Errorf("client qlog in %s: found %d files (%v)", qlogDir, len(files), err)
	}
	trace, err := qlogflow.ReadFile(files[0])
	if err != nil {
		return run, err
	}
	recv := trace.Receiver()
	run.StreamUpdates, run.ConnUpdates, run.Blocked = recv.StreamUpdates, recv.ConnUpdates, recv.Blocked
	run.Result = measuredResult(spec, run.Records, recv, trace.Reference.Sub(res.WindowStart)-cfg.OneWay)
	// The data direction's drops (loss model and full queue) are the
	// packets quic-go had to send again.
	run.Result.Retransmits = int(run.Link.Down.DropLoss + run.Link.Down.DropQueue)
	return run, nil
}

// measuredResult fills the simulator's result fields from what the real
// transfer measured; shift places the qlog's reference time on the
// transfer's clock.
func measuredResult(spec FlowControlSpec, records []results.Record, recv qlogflow.Receiver, shift time.Duration) flowsim.Result {
	cfg := spec.Config
	res := flowsim.Result{Allowance: spec.Name(), Scenario: cfg.Name, Source: "quic-go",
		WindowUpdates: recv.StreamUpdates + recv.ConnUpdates,
		MaxStreamWin:  cfg.StreamWindow, MaxConnWin: cfg.ConnWindow}
	var doneMs float64
	for _, r := range records {
		res.BytesTotal += int64(r.RespBytes)
		doneMs = max(doneMs, r.DoneMs)
	}
	res.CompletionS = doneMs/1000 - cfg.OneWay.Seconds()
	if res.CompletionS > 0 {
		res.ThroughputMbps = float64(res.BytesTotal) * 8 / res.CompletionS / 1e6
	}
	sample := cfg.Sample
	if sample == 0 {
		sample = time.Millisecond
	}
	next := time.Duration(-1 << 62)
	for i, p := range recv.Points {
		res.MaxStreamWin = max(res.MaxStreamWin, p.MaxStreamWindow)
		res.MaxConnWin = max(res.MaxConnWin, p.ConnWindow)
		t := p.T + shift
		if t < next && i != len(recv.Points)-1 {
			continue
		}
		s := flowsim.Sample{T: t, Received: make([]int64, cfg.Streams), MaxStreamWindow: p.MaxStreamWindow, StreamWindowSum: p.StreamWindowSum, ConnWindow: p.ConnWindow}
		copy(s.Received, p.Received)
		res.Series = append(res.Series, s)
		next = (t/sample + 1) * sample
	}
	return res
}

// StreamColumns are the columns of WriteStreams: one row per stream of
// each real transfer.
var StreamColumns = []string{"scenario", "setting", "stream", "bytes", "completion_ms", "goodput_mbps", "error"}

// WriteStreams writes each stream's completion time and goodput as tidy
// CSV. Completion counts from the request's sending, as the application
// saw it.
func WriteStreams(path string, runs []FlowControlRun) error {
	return results.WriteAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(StreamColumns); err != nil {
			return err
		}
		for _, run := range runs {
			for _, r := range run.Records {
				row := []string{run.Result.Scenario, run.Result.Allowance, strconv.Itoa(r.Seq), strconv.Itoa(r.RespBytes), "", "", r.Error}
				if r.OK() && r.DelayMs > 0 {
					row[4] = strconv.FormatFloat(r.DelayMs, 'f', 3, 64)
					row[5] = strconv.FormatFloat(float64(r.RespBytes)*8/r.DelayMs/1e3, 'f', 3, 64)
				}
				if err := cw.Write(row); err != nil {
					return err
				}
			}
		}
		cw.Flush()
		return cw.Error()
	})
}
