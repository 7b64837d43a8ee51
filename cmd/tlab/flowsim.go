package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"tlab/internal/emu"
	"tlab/internal/flowsim"
	"tlab/internal/flowsim/study"
	"tlab/internal/units"
)

func runFlowsim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("flowsim", "flowsim --scenario NAME [--real] [--json] [--out DIR] [link flags]\n\nSimulate study C's QUIC flow-control allowances (static, improved-static, autotuning,\nfast-autotuning, or quic-go's own) on a link. With --real, also run quic-go through the\nemulated link with static and auto-tuned windows, beside the simulator's model of quic-go.\nScenarios: "+strings.Join(flowsim.ScenarioNames(), ", ")+".", stderr)
	name := fs.String("scenario", "large-buffer", "scenario: "+strings.Join(flowsim.ScenarioNames(), ", "))
	allow := fs.String("allowances", "static,improved-static,autotuning,fast-autotuning", "comma-separated allowances (also: quic-go); autotuning and fast-autotuning hold their first two updates as the study did, or take @hold, @first-read or @start to time their first update by another source's rule")
	rate := fs.String("rate", "100Mbit", "link rate")
	rtt := fs.Duration("rtt", flowsim.StudyRTT, "link round-trip time (default: the study's, from its static allowance's rate)")
	loss := fs.String("loss", "0%", "random loss of data packets")
	noCC := fs.Bool("no-cc", false, "switch congestion control off to isolate flow control (simulator only)")
	cwnd := fs.Int("initial-cwnd", 10, "the simulator's initial congestion window, packets (its quic-go model always uses quic-go's 32)")
	consume := fs.String("consume-rate", "0", "application read rate (e.g. 50Mbit); 0 reads at once (simulator only)")
	seed := fs.Uint64("seed", 1, "seed of the loss decisions")
	streamWindow := fs.String("stream-window", "", "each stream's initial receive window, e.g. 8KiB (default: the scenario's, the study's)")
	streamUpper := fs.String("stream-upper", "", "each stream's upper bound for the window, e.g. 512KiB (default: the scenario's, the study's stated bound)")
	connWindow := fs.String("conn-window", "", "the connection's initial receive window (default: the scenario's)")
	connUpper := fs.String("conn-upper", "", "the connection's upper bound for the window (default: the scenario's)")
	size := fs.String("size", "", "the data each stream carries, e.g. 5MB (default: the scenario's; not with size-sweep, whose sizes are its sweep)")
	real := fs.Bool("real", false, "also measure quic-go through the emulated link (needs root or a user namespace)")
	mode := fs.String("emulator-mode", emu.ModeAdaptive, "emulator timer mode with --real: "+strings.Join(emu.Modes(), ", "))
	asJSON := fs.Bool("json", false, "print one object per allowance (and size) as JSON")
	gainMap := fs.Bool("map", false, "also map fast autotuning's throughput gain over autotuning on links of 10 Mbit/s-1 Gbit/s x 10-200 ms (the scenario otherwise as given; a size sweep's first size); gain-map.csv and a plot with --out")
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
	if *size != "" && *name == "size-sweep" {
		fmt.Fprintf(stderr, "tlab flowsim: --size: size-sweep sweeps the data size; give another scenario\n")
		return exitUsage
	}
	for _, o := range []struct {
		flag, value string
		set         func(c *flowsim.Config, v int64)
	}{
		{"stream-window", *streamWindow, func(c *flowsim.Config, v int64) { c.StreamWindow = v }},
		{"stream-upper", *streamUpper, func(c *flowsim.Config, v int64) { c.StreamUpper = v }},
		{"conn-window", *connWindow, func(c *flowsim.Config, v int64) { c.ConnWindow = v }},
		{"conn-upper", *connUpper, func(c *flowsim.Config, v int64) { c.ConnUpper = v }},
		{"size", *size, func(c *flowsim.Config, v int64) { c.BytesPerStream = v }},
	} {
		if o.value == "" {
			continue
		}
		v, err := units.ParseSize(o.value)
		if err != nil || v < 1 {
			fmt.Fprintf(stderr, "tlab flowsim: --%s %q: want a positive size such as 512KiB\n", o.flag, o.value)
			return exitUsage
		}
		for i := range cfgs {
			o.set(&cfgs[i], int64(v))
		}
	}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			fmt.Fprintf(stderr, "tlab flowsim: %s: %v\n", c.Name, err)
			return exitUsage
		}
	}
	for i := range cfgs {
		cfgs[i].Rate, cfgs[i].OneWay, cfgs[i].Loss, cfgs[i].Congestion, cfgs[i].ConsumeRate, cfgs[i].Seed = float64(r), *rtt/2, float64(l), !*noCC, float64(c)/8, *seed
		cfgs[i].InitialCwnd = *cwnd
	}
	flows := study.FlowStudy{Configs: cfgs, Allowances: allowances, Real: *real, Seed: *seed, Emulator: emu.EngineOptions{Mode: *mode}, Dir: *out, Log: stderr, Map: *gainMap}
	if *real && flows.Dir == "" {
		dir, err := os.MkdirTemp("", "tlab-flowsim-")
		if err != nil {
			return errorExit(stderr, err)
		}
		defer os.RemoveAll(dir)
		flows.Dir = dir
	}
	res, err := flows.Run(ctx)
	if err != nil {
		return errorExit(stderr, err)
	}
	results, sizes := res.Results, res.Sizes
	if *out != "" {
		setup := fmt.Sprintf("Link %s, RTT %v, loss %s, congestion control %s; simulated by tlab flowsim", *rate, *rtt, *loss, onOff(!*noCC))
		if *real {
			setup += ", and quic-go measured through the emulated link (time zero when the requests reach the server)"
		}
		if err := study.WriteFlowStudy(*out, *name, setup, res); err != nil {
			return errorExit(stderr, err)
		}
	}
	if *asJSON {
		return writeJSON(stdout, results)
	}
	fmt.Fprintf(stdout, "%s: link %s, RTT %v, loss %s, congestion control %s\n\n", *name, *rate, *rtt, *loss, onOff(!*noCC))
	printFlowsim(stdout, results, sizes)
	if len(res.Map) > 0 {
		fmt.Fprintf(stdout, "\nFast autotuning's throughput gain over autotuning, %%, by link (* the link above):\n")
		printGainMap(stdout, res.Map, res.MapLink)
	}
	if *real {
		fmt.Fprintf(stdout, "\nquic-go rows: measured through the emulated link (time zero when the requests reach the server);\n\"quic-go\" simulator rows: the simulator's model of quic-go's auto-tuning, for comparison.\n")
	}
	if *out != "" {
		fmt.Fprintf(stdout, "\nTime series, summary, plots and report.html in %s\n", *out)
	}
	return exitOK
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

// printGainMap prints a gain map: rates across, RTTs down.
func printGainMap(w io.Writer, pts []flowsim.GainPoint, own flowsim.GainPoint) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "RTT \\ RATE\t")
	for _, r := range flowsim.MapRates {
		fmt.Fprintf(tw, "%s\t", units.Bitrate(r))
	}
	fmt.Fprintln(tw)
	for i, p := range pts {
		if i%len(flowsim.MapRates) == 0 {
			fmt.Fprintf(tw, "%v\t", p.RTT)
		}
		mark := ""
		if p.RateBps == own.RateBps && p.RTT == own.RTT {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s%+.1f\t", mark, p.GainPct)
		if (i+1)%len(flowsim.MapRates) == 0 {
			fmt.Fprintln(tw)
		}
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
