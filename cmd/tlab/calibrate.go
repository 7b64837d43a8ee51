package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"tlab/internal/calibrate"
	"tlab/internal/emu"
	"tlab/internal/testbed"
)

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("calibrate", "calibrate [--json] [--quick] [--emulator-mode adaptive|busy|sleep] [--engine ring|mmsg] [--compare-engines [--rounds N]]\n\nMeasure the emulator's own accuracy on this machine: the latency it adds, how exactly it keeps\ndelays and rates, its forwarding capacity and realised loss, each against a target (about a minute).", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	quick := fs.Bool("quick", false, "shorter measurements (noisier figures)")
	mode := fs.String("emulator-mode", emu.ModeAdaptive, "emulator timer mode: adaptive (blocks, spinning only within the wake-up latency it measures on this host: an idle link costs no CPU), busy (polls, holds one core) or sleep (epoll + a fixed --spin before each release)")
	renamedFlag(fs, "mode", "emulator-mode")
	spin := fs.Duration("spin", testbed.DefaultSpin, "in sleep mode, how long before a release the engine starts to spin")
	engine := fs.String("engine", emu.EngineRing, "emulator engine: "+strings.Join(emu.Engines(), " or "))
	compare := fs.Bool("compare-engines", false, "instead of the checks, measure the mmsg engine against the ring engine in alternate rounds and print each figure's paired difference")
	rounds := fs.Int("rounds", 0, "with --compare-engines, how many rounds (at least 2; default 10, 6 with --quick)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := emu.ValidEngine(*engine); err != nil {
		fmt.Fprintf(stderr, "tlab calibrate: --%v\n", err)
		return exitUsage
	}
	if *rounds != 0 && (!*compare || *rounds < 2) {
		fmt.Fprintf(stderr, "tlab calibrate: --rounds %d: want 2 or more, with --compare-engines\n", *rounds)
		return exitUsage
	}
	if _, err := (emu.EngineOptions{Mode: *mode}).Validate(); err != nil {
		fmt.Fprintf(stderr, "tlab calibrate: --%v\n", err)
		return exitUsage
	}
	if code, handled := ensurePrivileges(append([]string{"calibrate"}, args...), stderr); handled {
		return code
	}
	opts := calibrate.Options{Quick: *quick, Emulator: emu.EngineOptions{Mode: *mode, Engine: *engine}, Spin: *spin, Seed: 1}
	if !*asJSON {
		opts.Progress = func(step string) { fmt.Fprintf(stderr, "calibrate: %s...\n", step) }
	}
	if *compare {
		n := *rounds
		if n == 0 {
			n = 10
			if *quick {
				n = 6
			}
		}
		return compareEngines(ctx, opts, n, *asJSON, stdout, stderr)
	}
	type result struct {
		r   *calibrate.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := calibrate.Run(ctx, opts)
		done <- result{r, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		// The step in flight tears its testbed down when it returns.
		fmt.Fprintln(stderr, "tlab calibrate: interrupted; finishing the step in flight and removing its testbed...")
		<-done
		return exitCanceled
	}
	if res.err != nil {
		return errorExit(stderr, res.err)
	}
	r := res.r
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		printCalibration(stdout, r)
	}
	switch r.Verdict {
	case "pass":
		return exitOK
	case "host":
		return exitHostNoisy
	case "inconclusive":
		return exitInconclusive
	}
	return exitFailure
}

func printCalibration(w io.Writer, r *calibrate.Report) {
	fmt.Fprintf(w, "tlab calibration on %s (%s, %d cores, kernel %s), emulator mode %s, engine %s, %.0f s\n\n",
		r.Machine.Hostname, r.Machine.CPU, r.Machine.Cores, r.Machine.Kernel, r.Mode, r.Engine, r.Duration)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tVALUE\tUNIT\tTARGET\tRESULT\tDETAIL")
	failed := 0
	for _, c := range r.Checks {
		res := "pass"
		switch {
		case c.Inconclusive:
			res = "INCONCLUSIVE"
		case !c.Pass:
			res = "FAIL"
			if c.Host != "" {
				res = "FAIL (host)"
			}
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.ValueText(), c.Unit, c.Target, res, c.Detail)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nFor context:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, c := range r.Info {
		fmt.Fprintf(tw, "  %s\t%g\t%s\t%s\n", c.Name, c.Value, c.Unit, c.Detail)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nThe host, step by step (a thread per CPU sleeping to an absolute time every 10 ms, at normal priority,\nso its waits include tlab's own busy threads; STOLEN is the hypervisor's share):")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "STEP\tWAKE-UP p50 us\tp99 us\tp99.9 us\tmax us\tSTOLEN %\t")
	for _, h := range r.Host {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t\n", h.Step, h.WakeP50Us, h.WakeP99Us, h.WakeP999Us, h.WakeMaxUs, h.StealPct)
	}
	tw.Flush()
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "\nWARNING: %s\n", warning)
	}
	if r.RecommendedMode != "" {
		fmt.Fprintf(w, "\nThis machine should use emulator mode %s (--emulator-mode, emulator.mode): %s.\n", r.RecommendedMode, r.ModeReason)
	}
	switch r.Verdict {
	case "pass":
		fmt.Fprintf(w, "\nAll %d checks pass.\n", len(r.Checks))
	case "inconclusive":
		var names []string
		for _, c := range r.Checks {
			if c.Inconclusive {
				names = append(names, c.Name)
			}
		}
		fmt.Fprintf(w, "\nNo check fails, but %s: the 95 %% interval straddles the target, so the data cannot say the emulator meets it. Run it again (without --quick, or on a quieter host) for more rounds.\n", strings.Join(names, ", "))
	case "host":
		fmt.Fprintf(w, "\n%d of %d checks FAIL, each explained by the host's own noise in the same step (FAIL (host)): the host is too noisy for tlab's targets right now; the emulator is not at fault. Timings measured now carry that noise (every result row reports it).\n", failed, len(r.Checks))
	default:
		fmt.Fprintf(w, "\n%d of %d checks FAIL and the host's noise does not explain all of them: the emulator is less accurate than tlab's targets on this machine.\n", failed, len(r.Checks))
	}
}

// compareEngines runs calibrate.CompareEngines (mmsg against ring) and
// prints its figures.
func compareEngines(ctx context.Context, opts calibrate.Options, rounds int, asJSON bool, stdout, stderr io.Writer) int {
	c, err := calibrate.CompareEngines(ctx, opts, emu.EngineMmsg, emu.EngineRing, rounds)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "tlab calibrate: interrupted; the testbeds of the round in flight were removed")
		return exitCanceled
	}
	if err != nil {
		return errorExit(stderr, err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(c)
		return exitOK
	}
	printEngineComparison(stdout, c)
	return exitOK
}

// printEngineComparison prints an engine comparison as a table, with the
// host's noise and any warning after it.
func printEngineComparison(w io.Writer, c *calibrate.EngineComparison) {
	fmt.Fprintf(w, "tlab engine comparison on %s (%s, %d cores, kernel %s), emulator mode %s, %.0f s\n",
		c.Machine.Hostname, c.Machine.CPU, c.Machine.Cores, c.Machine.Kernel, c.Mode, c.Duration)
	fmt.Fprintf(w, "%s (baseline) against %s (candidate), %d rounds in ABBA order, each on fresh testbeds; DIFF is %s - %s with its 95 %% interval by a bootstrap over the rounds\n\n",
		c.Baseline, c.Candidate, c.Rounds, c.Candidate, c.Baseline)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "FIGURE\tUNIT\t%s\t%s\tDIFF\t95%% INTERVAL\tOUTCOME\tTARGET\tDETAIL\n", strings.ToUpper(c.Baseline), strings.ToUpper(c.Candidate))
	for _, f := range c.Figures {
		target := ""
		if f.CandidateMeets != nil {
			target = f.Target + map[bool]string{true: " met", false: " not met"}[*f.CandidateMeets]
		}
		interval := ""
		if f.Better != "same" {
			interval = fmt.Sprintf("[%g, %g]", f.Interval[0], f.Interval[1])
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%g\t%+g\t%s\t%s\t%s\t%s\n", f.Name, f.Unit, f.Baseline, f.Candidate, f.Difference, interval, f.Outcome, target, f.Detail)
	}
	tw.Flush()
	h := c.Host
	fmt.Fprintf(w, "\nThe host during the comparison: wake-up p99 %.0f us, p99.9 %.0f us, max %.1f ms; %.1f %% of CPU time stolen.\n", h.WakeP99Us, h.WakeP999Us, h.WakeMaxUs/1000, h.StealPct)
	for _, warning := range c.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
}
