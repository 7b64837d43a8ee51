package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"tlab/internal/experiment"
	"tlab/internal/flowsim"
	"tlab/internal/report"
	"tlab/internal/units"
)

func runFlowsim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("flowsim", "flowsim --scenario NAME [--real] [--json] [--out DIR] [link flags]\n\nSimulate study C's QUIC flow-control allowances (static, improved-static, autotuning,\nfast-autotuning, or quic-go's own) on a link. With --real, also run quic-go through the\nemulated link with static and auto-tuned windows, beside the simulator's model of quic-go.\nScenarios: "+strings.Join(flowsim.ScenarioNames(), ", ")+".", stderr)
	name := fs.String("scenario", "large-buffer", "scenario: "+strings.Join(flowsim.ScenarioNames(), ", "))
	allow := fs.String("allowances", "static,improved-static,autotuning,fast-autotuning", "comma-separated allowances (also: quic-go)")
	rate := fs.String("rate", "100Mbit", "link rate")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "link round-trip time")
	loss := fs.String("loss", "0%", "random loss of data packets")
	noCC := fs.Bool("no-cc", false, "switch congestion control off to isolate flow control (simulator only)")
	cwnd := fs.Int("initial-cwnd", 10, "the simulator's initial congestion window, packets (its quic-go model always uses quic-go's 32)")
	consume := fs.String("consume-rate", "0", "application read rate (e.g. 50Mbit); 0 reads at once (simulator only)")
	seed := fs.Uint64("seed", 1, "seed of the loss decisions")
	real := fs.Bool("real", false, "also measure quic-go through the emulated link (needs root or a user namespace)")
	mode := fs.String("emulator-mode", "", "emulator timer mode with --real: busy (default) or sleep")
	asJSON := fs.Bool("json", false, "print one object per allowance (and size) as JSON")
	out := fs.String("out", "", "directory for the time series (CSV), summary.json and plots (SVG, PNG); with --real also qlog/ and streams.csv")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfgs, ok := flowsim.Scenarios()[*name]
	if !ok {
		fmt.Fprintf(stderr, "tlab flowsim: unknown scenario %q: want %s\n", *name, strings.Join(flowsim.ScenarioNames(), ", "))
		return exitUsage
	}
	r, err := units.ParseBitrate(*rate)
	l, lerr := units.ParseRatio(*loss)
	c, cerr := units.ParseBitrate(*consume)
	if err != nil || lerr != nil || cerr != nil {
		fmt.Fprintf(stderr, "tlab flowsim: %v\n", firstErr(err, lerr, cerr))
		return exitUsage
	}
	if *cwnd < 1 {
		fmt.Fprintf(stderr, "tlab flowsim: --initial-cwnd must be at least 1 packet\n")
		return exitUsage
	}
	if *real && (*noCC || c > 0) {
		fmt.Fprintf(stderr, "tlab flowsim: --real measures quic-go, which always has congestion control and an application reading at once: drop --no-cc and --consume-rate\n")
		return exitUsage
	}
	var allowances []flowsim.Allowance
	for _, a := range splitList(*allow) {
		al, err := flowsim.LookupAllowance(a)
		if err != nil {
			fmt.Fprintf(stderr, "tlab flowsim: %v\n", err)
			return exitUsage
		}
		allowances = append(allowances, al)
	}
	if *real {
		if code, handled := ensurePrivileges(append([]string{"flowsim"}, args...), stderr); handled {
			return code
		}
	}
	for i := range cfgs {
		cfgs[i].Rate, cfgs[i].OneWay, cfgs[i].Loss, cfgs[i].Congestion, cfgs[i].ConsumeRate, cfgs[i].Seed = float64(r), *rtt/2, float64(l), !*noCC, float64(c)/8, *seed
		cfgs[i].InitialCwnd = *cwnd
	}
	results, err := simulate(cfgs, allowances)
	if err != nil {
		return errorExit(stderr, err)
	}
	var runs []experiment.FlowControlRun
	if *real {
		model, err := simulateQuicGo(cfgs)
		if err != nil {
			return errorExit(stderr, err)
		}
		results = append(results, model...)
		dir := *out
		if dir == "" {
			if dir, err = os.MkdirTemp("", "tlab-flowsim-"); err != nil {
				return errorExit(stderr, err)
			}
			defer os.RemoveAll(dir)
		}
		runs, err = measureQuicGo(ctx, cfgs, *seed, *mode, dir, stderr)
		if err != nil {
			return errorExit(stderr, err)
		}
		for _, run := range runs {
			results = append(results, run.Result)
		}
	}
	var sizes []int64
	if len(cfgs) > 1 {
		for _, cfg := range cfgs {
			sizes = append(sizes, cfg.BytesPerStream*int64(cfg.Streams))
		}
	}
	if *out != "" {
		setup := fmt.Sprintf("Link %s, RTT %v, loss %s, congestion control %s; simulated by tlab flowsim", *rate, *rtt, *loss, onOff(!*noCC))
		if *real {
			setup += ", and quic-go measured through the emulated link (time zero when the requests reach the server)"
		}
		if err := writeFlowsim(*out, *name, setup, results, sizes); err != nil {
			return errorExit(stderr, err)
		}
		if *real {
			if err := experiment.WriteStreams(filepath.Join(*out, "streams.csv"), runs); err != nil {
				return errorExit(stderr, err)
			}
		}
	}
	if *asJSON {
		return writeJSON(stdout, results)
	}
	fmt.Fprintf(stdout, "%s: link %s, RTT %v, loss %s, congestion control %s\n\n", *name, *rate, *rtt, *loss, onOff(!*noCC))
	printFlowsim(stdout, results, sizes)
	if *real {
		fmt.Fprintf(stdout, "\nquic-go rows: measured through the emulated link (time zero when the requests reach the server);\n\"quic-go\" simulator rows: the simulator's model of quic-go's auto-tuning, for comparison.\n")
	}
	if *out != "" {
		fmt.Fprintf(stdout, "\nTime series, summary, plots and report.html in %s\n", *out)
	}
	return exitOK
}

// simulate runs every allowance on every configuration, allowance by
// allowance.
func simulate(cfgs []flowsim.Config, allowances []flowsim.Allowance) ([]flowsim.Result, error) {
	var results []flowsim.Result
	for _, a := range allowances {
		for _, cfg := range cfgs {
			res, err := flowsim.Run(cfg, a)
			if err != nil {
				return nil, err
			}
			results = append(results, res)
		}
	}
	return results, nil
}

// quicGoSettings are the two quic-go settings study C's question maps to:
// windows fixed at their initial sizes, and auto-tuned up to the bounds.
var quicGoSettings = []bool{true, false}

// simulateQuicGo runs the simulator's model of quic-go with each setting,
// with quic-go's initial congestion window, named as the measured rows.
func simulateQuicGo(cfgs []flowsim.Config) ([]flowsim.Result, error) {
	var results []flowsim.Result
	for _, static := range quicGoSettings {
		for _, cfg := range cfgs {
			cfg.InitialCwnd = 32
			if static {
				cfg.StreamUpper, cfg.ConnUpper = cfg.StreamWindow, cfg.ConnWindow
			}
			res, err := flowsim.Run(cfg, flowsim.QuicGo{})
			if err != nil {
				return nil, err
			}
			res.Allowance = experiment.FlowControlSpec{Static: static}.Name()
			results = append(results, res)
		}
	}
	return results, nil
}

// measureQuicGo runs each setting on each configuration on quic-go, one
// fresh testbed per transfer, and says so on stderr as it goes.
func measureQuicGo(ctx context.Context, cfgs []flowsim.Config, seed uint64, mode, dir string, stderr io.Writer) ([]experiment.FlowControlRun, error) {
	var runs []experiment.FlowControlRun
	for _, static := range quicGoSettings {
		for _, cfg := range cfgs {
			spec := experiment.FlowControlSpec{Config: cfg, Static: static, Seed: seed, Dir: dir, EmulatorMode: mode}
			fmt.Fprintf(stderr, "measuring %s, %s ... ", spec.Name(), cfg.Name)
			t0 := time.Now()
			run, err := experiment.RunFlowControl(ctx, spec)
			if err != nil {
				fmt.Fprintln(stderr, "failed")
				return nil, fmt.Errorf("%s, %s: %w", spec.Name(), cfg.Name, err)
			}
			// The instrument's own error, beside the result.
			fmt.Fprintf(stderr, "%.1f s (emulator release error p99 %.1f µs, %d packets dropped on the link)\n",
				time.Since(t0).Seconds(), run.EmuReleaseP99Us, run.Result.Retransmits)
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// printFlowsim prints the comparison table.
func printFlowsim(w io.Writer, results []flowsim.Result, sizes []int64) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SOURCE\tALLOWANCE\tDATA\tTHROUGHPUT Mbit/s\tCOMPLETION s\tUPDATES\tMAX STREAM WIN\tMAX CONN WIN\tBLOCKED s\tLOST\t")
	for i, res := range results {
		data := fmt.Sprintf("%.1f MB", float64(res.BytesTotal)/1e6)
		if len(sizes) > 0 {
			data = fmt.Sprintf("%d KB", sizes[i%len(sizes)]/1000)
		}
		blocked := fmt.Sprintf("%.3f", res.BlockedS)
		if res.Source != "simulator" {
			blocked = "-" // a real sender's blocked time is not logged
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.3f\t%d\t%s\t%s\t%s\t%d\t\n", res.Source, res.Allowance, data, res.ThroughputMbps, res.CompletionS, res.WindowUpdates,
			units.Size(res.MaxStreamWin), units.Size(res.MaxConnWin), blocked, res.Retransmits)
	}
	tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeFlowsim writes summary.json, one CSV time series per run, the
// plots and report.html.
func writeFlowsim(dir, name, setup string, results []flowsim.Result, sizes []int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	writeJSON(f, results)
	f.Close()
	for i, res := range results {
		stem := strings.ReplaceAll(res.Allowance, " ", "-")
		if res.Source != "simulator" {
			stem += "-measured"
		}
		if len(sizes) > 0 {
			stem += "-" + strconv.FormatInt(sizes[i%len(sizes)]/1000, 10) + "KB"
		}
		cf, err := os.Create(filepath.Join(dir, "series-"+stem+".csv"))
		if err != nil {
			return err
		}
		w := csv.NewWriter(cf)
		header := []string{"source", "allowance", "t_ms"}
		if len(res.Series) > 0 {
			for s := range res.Series[0].Received {
				header = append(header, fmt.Sprintf("stream%d_bytes", s))
			}
		}
		w.Write(append(header, "max_stream_window_bytes", "conn_window_bytes"))
		for _, s := range res.Series {
			row := []string{res.Source, res.Allowance, strconv.FormatFloat(float64(s.T.Microseconds())/1000, 'f', 3, 64)}
			for _, b := range s.Received {
				row = append(row, strconv.FormatInt(b, 10))
			}
			w.Write(append(row, strconv.FormatInt(s.MaxStreamWindow, 10), strconv.FormatInt(s.ConnWindow, 10)))
		}
		w.Flush()
		cf.Close()
		if err := w.Error(); err != nil {
			return err
		}
	}
	figs, err := report.FlowsimPlots(dir, name, results, sizes)
	if err != nil {
		return err
	}
	return report.WriteFlowsimHTML(dir, name, setup, results, figs)
}
