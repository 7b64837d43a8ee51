package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/qoo"
	"tlab/internal/results"
)

func runAdvise(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("advise", "advise DIR --require 'METRIC<=BOUND' [--require ...] [--qoo PROFILE] [--json]\n\nWhich stack meets the application's requirements on each network of a finished run? The first\nrequirement is the priority that picks the best. Exit 0 when a stack meets every requirement on\nevery network, 1 when not (as grep). --qoo scores each stack from 0 (unacceptable) to 100\n(optimal) against a requirement profile (IETF Quality of Outcome; tlab qoo lists tlab's own).", stderr)
	var reqs listFlag
	fs.Var(&reqs, "require", "a requirement on a metric (tlab metrics), such as delay_p99_ms<=20 or jitter_pct<10 (repeatable)")
	qooFlag := fs.String("qoo", "", "a Quality of Outcome requirement profile: one of tlab qoo's, or a LibreQoS qoo_profiles.json FILE[#ID]")
	asJSON := fs.Bool("json", false, "print the answers as JSON")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab advise: give the run directory")
		return exitUsage
	}
	if len(reqs) == 0 && *qooFlag == "" {
		fmt.Fprintln(stderr, "tlab advise: give a requirement (--require 'delay_p99_ms<=20'), a requirement profile (--qoo NAME), or both")
		return exitUsage
	}
	parsed, err := parseRequirements(reqs)
	if err != nil {
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	var profile *qoo.Profile
	if *qooFlag != "" {
		p, err := qoo.Resolve(*qooFlag)
		if err != nil {
			fmt.Fprintf(stderr, "tlab advise: --qoo: %v\n", err)
			return exitUsage
		}
		profile = &p
	}
	r, err := results.Open(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	answers, err := analysis.Ask(r, parsed, profile)
	var scoring *analysis.ScoreError
	switch {
	case errors.As(err, &scoring):
		return errorExit(stderr, fmt.Errorf("--qoo needs the run's records: %w", scoring.Err))
	case err != nil:
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		if c := writeJSON(stdout, answers); c != exitOK {
			return c
		}
	} else {
		if len(parsed) > 0 {
			printAnswers(stdout, answers)
		}
		if profile != nil {
			printQoO(stdout, *profile, answers)
		}
	}
	if len(parsed) == 0 || advise.Met(answers) {
		return exitOK
	}
	return exitFailure
}

// printQoO prints each stack's Quality of Outcome on each network.
func printQoO(w io.Writer, p qoo.Profile, answers []advise.Answer) {
	fmt.Fprintf(w, "\nQuality of Outcome against %s (%s): 0 unacceptable, 100 optimal (draft-ietf-ippm-qoo-09).\n", p.ID, p.Name)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	// The throughput component is a step, shown only where the profile
	// asks for a minimum: the share of repetitions that met it.
	thr := p.MinThroughputMbps > 0
	head := "  NETWORK\tSTACK\tQoO\t95 % CI\tLATENCY\tLOSS\t"
	if thr {
		head += fmt.Sprintf("THROUGHPUT ≥ %g Mbit/s\t", p.MinThroughputMbps)
	}
	fmt.Fprintln(tw, head+"LIMITED BY\tREPS")
	for _, a := range answers {
		where := a.Profile
		if a.Params != "" {
			where += " (" + a.Params + ")"
		}
		for _, s := range a.Stacks {
			if s.QoO == nil {
				fmt.Fprintf(tw, "  %s\t%s\t–\t\t\t\tno records\t\n", where, s.Protocol)
				continue
			}
			o := s.QoO
			ci := "needs 3 repetitions"
			if !math.IsNaN(o.Low) {
				ci = fmt.Sprintf("%.0f–%.0f", o.Low, o.High)
			}
			met := ""
			if thr {
				met = fmt.Sprintf("%.0f %% of reps\t", o.Throughput)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%.0f\t%s\t%.0f\t%.0f\t%s%s\t%d\n", where, s.Protocol, o.Score, ci, o.Latency, o.Loss, met, o.Limit, o.N)
		}
	}
	tw.Flush()
}

// parseRequirements reads --require values against the metric registry.
func parseRequirements(in []string) ([]advise.Requirement, error) {
	var parts []string
	for _, s := range in {
		parts = append(parts, strings.Split(s, ",")...)
	}
	return advise.ParseAll(parts)
}

// printAnswers prints the answer for each network, then each stack's
// checks.
func printAnswers(w io.Writer, answers []advise.Answer) {
	if s := advise.EverywhereSentence(answers); s != "" {
		fmt.Fprintf(w, "In short: %s.\n", s)
	}
	for _, a := range answers {
		where := a.Profile
		if a.Params != "" {
			where += " (" + a.Params + ")"
		}
		fmt.Fprintf(w, "%s: %s.\n", where, a.Summary)
		if a.ToDecide != "" {
			fmt.Fprintf(w, "  to decide: %s\n", a.ToDecide)
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, s := range a.Stacks {
			var parts []string
			for _, c := range s.Checks {
				v := fmt.Sprintf("%s %s (%s %s", c.Requirement.Metric, num(c.Value), c.Requirement.Op, num(c.Requirement.Bound))
				if !math.IsNaN(c.Low) {
					v += fmt.Sprintf("; 95 %% CI %s–%s", num(c.Low), num(c.High))
				}
				v += ")"
				if c.Status != advise.Meets {
					v += " " + strings.ToUpper(string(c.Status))
					if c.Why != "" {
						v += ": " + c.Why
					}
				}
				parts = append(parts, v)
			}
			failed := ""
			if !math.IsNaN(s.FailedPct) {
				failed = fmt.Sprintf("%s %% failed", num(s.FailedPct))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Protocol, s.Status, failed, strings.Join(parts, "; "))
		}
		tw.Flush()
	}
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 1):
		return "inf"
	}
	return fmt.Sprintf("%.3g", v)
}
