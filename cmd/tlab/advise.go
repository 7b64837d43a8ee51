package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"tlab/internal/advise"
	"tlab/internal/results"
)

func runAdvise(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("advise", "advise DIR --require 'METRIC<=BOUND' [--require ...] [--json]\n\nWhich stack meets the application's requirements on each network of a finished run? The first\nrequirement is the priority that picks the best. Exit 0 when a stack meets every requirement on\nevery network, 1 when not (as grep).", stderr)
	var reqs listFlag
	fs.Var(&reqs, "require", "a requirement on a metric (tlab metrics), such as delay_p99_ms<=20 or jitter_pct<10 (repeatable)")
	asJSON := fs.Bool("json", false, "print the answers as JSON")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab advise: give the run directory")
		return exitUsage
	}
	parsed, err := parseRequirements(reqs)
	if err != nil {
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	r, err := results.Open(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	answers, err := advise.Evaluate(r.Rows, parsed)
	if err != nil {
		fmt.Fprintf(stderr, "tlab advise: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		if c := writeJSON(stdout, answers); c != exitOK {
			return c
		}
	} else {
		printAnswers(stdout, answers)
	}
	if advise.Met(answers) {
		return exitOK
	}
	return exitFailure
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
