// Package study runs study C: the flow-control simulator's allowances
// (internal/flowsim) on the study's scenarios, and the same questions on a
// real stack (quic-go through the emulated link, windows read from qlog),
// side by side, into a directory with plots and a report.
package study

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"tlab/internal/emu"
	"tlab/internal/flowsim"
	"tlab/internal/report"
	"tlab/internal/results"
)

// FlowStudy is study C as one job: the simulator's allowances on each
// configuration and, with Real, quic-go's two settings simulated (the
// simulator's model of quic-go) and measured through the emulated link.
type FlowStudy struct {
	Configs    []flowsim.Config
	Allowances []flowsim.Allowance
	Real       bool
	Seed       uint64
	// Emulator is the emulator's engine for the real runs.
	Emulator emu.EngineOptions
	// Dir receives qlog files of the real runs; required with Real.
	Dir string
	// Log, when set, hears about each real run as it ends, with the
	// emulator's own release error beside its result.
	Log io.Writer
	// Map also runs the first configuration's gain map: autotuning
	// against fast autotuning on every link of flowsim.MapRates ×
	// flowsim.MapRTTs.
	Map bool
}

// FlowStudyResult is every row of a flow study.
type FlowStudyResult struct {
	Results []flowsim.Result
	// Runs are the real transfers (with Real), in Results' order.
	Runs []FlowControlRun
	// Sizes are the data sizes of a size sweep (more than one
	// configuration), in configuration order; nil otherwise.
	Sizes []int64
	// Map is the gain map (with Map), and MapLink the rate and RTT of
	// the configuration it varies, which its plot marks.
	Map     []flowsim.GainPoint
	MapLink flowsim.GainPoint
}

// quicGoSettings are the two quic-go settings study C's question maps to:
// windows fixed at their initial sizes, and auto-tuned up to the bounds.
var quicGoSettings = []bool{true, false}

// Run simulates every allowance on every configuration, allowance by
// allowance, then with Real the quic-go model and the measured runs.
func (fs FlowStudy) Run(ctx context.Context) (FlowStudyResult, error) {
	var out FlowStudyResult
	if len(fs.Configs) > 1 {
		for _, cfg := range fs.Configs {
			out.Sizes = append(out.Sizes, cfg.BytesPerStream*int64(cfg.Streams))
		}
	}
	for _, a := range fs.Allowances {
		for _, cfg := range fs.Configs {
			res, err := flowsim.Run(cfg, a)
			if err != nil {
				return out, err
			}
			out.Results = append(out.Results, res)
		}
	}
	if fs.Map && len(fs.Configs) > 0 {
		c := fs.Configs[0]
		// The scenario's own link is always a point of its map.
		m, err := flowsim.GainMap(c, withValue(flowsim.MapRates, c.Rate), withValue(flowsim.MapRTTs, c.RTT()))
		if err != nil {
			return out, err
		}
		out.Map, out.MapLink = m, flowsim.GainPoint{RateBps: c.Rate, RTT: c.RTT()}
	}
	if !fs.Real {
		return out, nil
	}
	if fs.Dir == "" {
		return out, fmt.Errorf("flow study: real runs need a directory for their qlog files")
	}
	// The simulator's model of quic-go, with quic-go's initial
	// congestion window, named as the measured rows.
	for _, static := range quicGoSettings {
		for _, cfg := range fs.Configs {
			cfg.InitialCwnd = 32
			if static {
				cfg.StreamUpper, cfg.ConnUpper = cfg.StreamWindow, cfg.ConnWindow
			}
			res, err := flowsim.Run(cfg, flowsim.QuicGo{})
			if err != nil {
				return out, err
			}
			res.Allowance = FlowControlSpec{Static: static}.Name()
			out.Results = append(out.Results, res)
		}
	}
	for _, static := range quicGoSettings {
		for _, cfg := range fs.Configs {
			spec := FlowControlSpec{Config: cfg, Static: static, Seed: fs.Seed, Dir: fs.Dir, Emulator: fs.Emulator}
			fs.logf("measuring %s, %s ... ", spec.Name(), cfg.Name)
			t0 := time.Now()
			run, err := RunFlowControl(ctx, spec)
			if err != nil {
				fs.logf("failed\n")
				return out, fmt.Errorf("%s, %s: %w", spec.Name(), cfg.Name, err)
			}
			fs.logf("%.1f s (emulator release error p99 %.1f µs, %d packets dropped on the link)\n",
				time.Since(t0).Seconds(), run.EmuReleaseP99Us, run.Result.Retransmits)
			out.Runs = append(out.Runs, run)
			out.Results = append(out.Results, run.Result)
		}
	}
	return out, nil
}

func (fs FlowStudy) logf(format string, args ...any) {
	if fs.Log != nil {
		fmt.Fprintf(fs.Log, format, args...)
	}
}

// WriteFlowStudy writes summary.json, one CSV time series per result,
// streams.csv (with real runs), the plots and report.html into dir. Every
// file is written atomically and every write error is returned.
func WriteFlowStudy(dir, name, setup string, r FlowStudyResult) error {
	if err := results.PrepareOut(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r.Results, "", "  ")
	if err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, "summary.json"), append(b, '\n')); err != nil {
		return err
	}
	for i, res := range r.Results {
		stem := strings.ReplaceAll(res.Allowance, " ", "-")
		if res.Source != "simulator" {
			stem += "-measured"
		}
		if len(r.Sizes) > 0 {
			stem += "-" + strconv.FormatInt(r.Sizes[i%len(r.Sizes)]/1000, 10) + "KB"
		}
		if err := writeUpdates(filepath.Join(dir, "updates-"+results.SafeName(stem)+".csv"), res); err != nil {
			return err
		}
		if err := writeSeries(filepath.Join(dir, "series-"+results.SafeName(stem)+".csv"), res); err != nil {
			return err
		}
	}
	if len(r.Runs) > 0 {
		if err := WriteStreams(filepath.Join(dir, "streams.csv"), r.Runs); err != nil {
			return err
		}
	}
	figs, err := report.FlowsimPlots(dir, name, r.Results, r.Sizes)
	if err != nil {
		return err
	}
	if len(r.Map) > 0 {
		if err := writeGainMap(filepath.Join(dir, "gain-map.csv"), r.Map); err != nil {
			return err
		}
		f, err := report.GainMapPlot(dir, name, r.Map, r.MapLink.RateBps, r.MapLink.RTT)
		if err != nil {
			return fmt.Errorf("gain map: %w", err)
		}
		figs = append(figs, f)
	}
	return report.WriteFlowsimHTML(dir, name, setup, r.Results, figs)
}

// writeSeries writes one result's time series: bytes received per stream
// and the windows, by time.
func writeSeries(path string, res flowsim.Result) error {
	return results.WriteAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		header := []string{"source", "allowance", "t_ms"}
		if len(res.Series) > 0 {
			for s := range res.Series[0].Received {
				header = append(header, fmt.Sprintf("stream%d_bytes", s))
			}
		}
		if err := cw.Write(append(header, "max_stream_window_bytes", "stream_window_sum_bytes", "conn_window_bytes")); err != nil {
			return err
		}
		for _, s := range res.Series {
			row := []string{res.Source, res.Allowance, strconv.FormatFloat(float64(s.T.Microseconds())/1000, 'f', 3, 64)}
			for _, b := range s.Received {
				row = append(row, strconv.FormatInt(b, 10))
			}
			if err := cw.Write(append(row, strconv.FormatInt(s.MaxStreamWindow, 10), strconv.FormatInt(s.StreamWindowSum, 10), strconv.FormatInt(s.ConnWindow, 10))); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// writeUpdates writes a run's window updates, one row each (stream -1 is
// the connection): the trace that explains an allowance. A measured run,
// which has no decisions to trace, writes none.
func writeUpdates(path string, res flowsim.Result) error {
	if len(res.Updates) == 0 {
		return nil
	}
	return results.WriteAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write([]string{"source", "allowance", "t_ms", "stream", "avail_bytes", "window_bytes", "grew", "max_offset", "credit_bytes"}); err != nil {
			return err
		}
		for _, u := range res.Updates {
			row := []string{res.Source, res.Allowance, strconv.FormatFloat(float64(u.T.Microseconds())/1000, 'f', 3, 64), strconv.Itoa(u.Stream),
				strconv.FormatInt(u.Avail, 10), strconv.FormatInt(u.Size, 10), strconv.FormatBool(u.Grew), strconv.FormatInt(u.MaxOffset, 10), strconv.FormatInt(u.Credit, 10)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// writeGainMap writes a gain map, one link a row.
func writeGainMap(path string, pts []flowsim.GainPoint) error {
	return results.WriteAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write([]string{"rate_mbps", "rtt_ms", "bdp_bytes", "autotuning_mbps", "fast_autotuning_mbps", "gain_pct"}); err != nil {
			return err
		}
		for _, p := range pts {
			f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
			if err := cw.Write([]string{f(p.RateBps / 1e6), f(float64(p.RTT.Microseconds()) / 1000), f(p.RateBps / 8 * p.RTT.Seconds()), f(p.BaseMbps), f(p.FastMbps), f(p.GainPct)}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// withValue returns grid with v added in order, unless it is there already.
func withValue[T cmp.Ordered](grid []T, v T) []T {
	if slices.Contains(grid, v) {
		return grid
	}
	out := append(slices.Clone(grid), v)
	slices.Sort(out)
	return out
}
