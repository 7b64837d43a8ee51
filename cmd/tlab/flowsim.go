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

	"tlab/internal/flowsim"
	"tlab/internal/report"
	"tlab/internal/units"
)

func runFlowsim(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("flowsim", "flowsim --scenario NAME [--json] [--out DIR] [link flags]\n\nSimulate study C's QUIC flow-control allowances (static, improved-static, autotuning,\nfast-autotuning) on a link. Scenarios: "+strings.Join(flowsim.ScenarioNames(), ", ")+".", stderr)
	name := fs.String("scenario", "large-buffer", "scenario: "+strings.Join(flowsim.ScenarioNames(), ", "))
	allow := fs.String("allowances", "static,improved-static,autotuning,fast-autotuning", "comma-separated allowances")
	rate := fs.String("rate", "100Mbit", "link rate")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "link round-trip time")
	loss := fs.String("loss", "0%", "random loss of data packets")
	noCC := fs.Bool("no-cc", false, "switch congestion control off to isolate flow control")
	consume := fs.String("consume-rate", "0", "application read rate (e.g. 50Mbit); 0 reads at once")
	seed := fs.Uint64("seed", 1, "seed of the loss decisions")
	asJSON := fs.Bool("json", false, "print one object per allowance (and size) as JSON")
	out := fs.String("out", "", "directory for the time series (CSV), summary.json and plots (SVG, PNG)")
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
	var allowances []flowsim.Allowance
	for _, a := range splitList(*allow) {
		al, err := flowsim.LookupAllowance(a)
		if err != nil {
			fmt.Fprintf(stderr, "tlab flowsim: %v\n", err)
			return exitUsage
		}
		allowances = append(allowances, al)
	}
	var results []flowsim.Result
	var sizes []int64
	for _, a := range allowances {
		for _, cfg := range cfgs {
			cfg.Rate, cfg.OneWay, cfg.Loss, cfg.Congestion, cfg.ConsumeRate, cfg.Seed = float64(r), *rtt/2, float64(l), !*noCC, float64(c)/8, *seed
			res, err := flowsim.Run(cfg, a)
			if err != nil {
				return errorExit(stderr, err)
			}
			results = append(results, res)
			if len(cfgs) > 1 {
				sizes = append(sizes, cfg.BytesPerStream*int64(cfg.Streams))
			}
		}
	}
	if *out != "" {
		if err := writeFlowsim(*out, *name, results, sizes); err != nil {
			return errorExit(stderr, err)
		}
	}
	if *asJSON {
		return writeJSON(stdout, results)
	}
	fmt.Fprintf(stdout, "%s: link %s, RTT %v, loss %s, congestion control %v\n\n", *name, *rate, *rtt, *loss, !*noCC)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ALLOWANCE\tDATA\tTHROUGHPUT Mbit/s\tCOMPLETION s\tUPDATES\tMAX STREAM WIN\tMAX CONN WIN\tBLOCKED s\t")
	for i, res := range results {
		data := fmt.Sprintf("%.1f MB", float64(res.BytesTotal)/1e6)
		if len(sizes) > 0 {
			data = fmt.Sprintf("%d KB", sizes[i%len(sizes)]/1000)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3f\t%d\t%s\t%s\t%.3f\t\n", res.Allowance, data, res.ThroughputMbps, res.CompletionS, res.WindowUpdates,
			units.Size(res.MaxStreamWin), units.Size(res.MaxConnWin), res.BlockedS)
	}
	tw.Flush()
	if *out != "" {
		fmt.Fprintf(stdout, "\nTime series, summary and plots in %s\n", *out)
	}
	return exitOK
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeFlowsim writes summary.json, one CSV time series per run and the
// plots.
func writeFlowsim(dir, name string, results []flowsim.Result, sizes []int64) error {
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
		stem := res.Allowance
		if len(sizes) > 0 {
			stem += "-" + strconv.FormatInt(sizes[i%len(sizes)]/1000, 10) + "KB"
		}
		cf, err := os.Create(filepath.Join(dir, "series-"+stem+".csv"))
		if err != nil {
			return err
		}
		w := csv.NewWriter(cf)
		header := []string{"allowance", "t_ms"}
		if len(res.Series) > 0 {
			for s := range res.Series[0].Received {
				header = append(header, fmt.Sprintf("stream%d_bytes", s))
			}
		}
		w.Write(append(header, "max_stream_window_bytes", "conn_window_bytes"))
		for _, s := range res.Series {
			row := []string{res.Allowance, strconv.FormatFloat(float64(s.T.Microseconds())/1000, 'f', 3, 64)}
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
	_, err = report.FlowsimPlots(dir, name, results, sizes)
	return err
}
