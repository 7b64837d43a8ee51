package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"tlab/internal/qoo"
)

// runQoO lists tlab's requirement profiles, or writes them as a LibreQoS
// qoo_profiles.json for an operator's shaper.
func runQoO(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("qoo", "qoo [--json] [--describe]\n\nThe Quality of Outcome requirement profiles tlab ships (draft-ietf-ippm-qoo-09), one per study's\napplication: tlab advise DIR --qoo ID scores each stack against one. --json writes them as\nLibreQoS reads them (qoo_profiles.json); --describe says where each number comes from.", stderr)
	asJSON := fs.Bool("json", false, "write the profiles as a LibreQoS qoo_profiles.json")
	describe := fs.Bool("describe", false, "print each profile's description (the source of each number)")
	if _, code, ok := parseArgs(fs, args, 0); !ok {
		return code
	}
	if *asJSON {
		b, left := qoo.BuiltinJSON()
		if _, err := stdout.Write(b); err != nil {
			return errorExit(stderr, err)
		}
		if len(left) > 0 {
			fmt.Fprintf(stderr, "tlab qoo: left out %s: its bounds follow the request interval, which LibreQoS's format cannot say\n", strings.Join(left, ", "))
		}
		return exitOK
	}
	f := qoo.Builtin()
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLATENCY: OPTIMAL → UNACCEPTABLE\tLOSS\tTHROUGHPUT\tAPPLICATION")
	for _, p := range f.Profiles {
		var pts []string
		for _, l := range p.Latency {
			if p.PerInterval {
				pts = append(pts, fmt.Sprintf("p%g %g → %g × the interval", l.Percentile, l.OptimalMs, l.UnacceptableMs))
				continue
			}
			pts = append(pts, fmt.Sprintf("p%g %g → %g ms", l.Percentile, l.OptimalMs, l.UnacceptableMs))
		}
		thr := "–"
		if p.MinThroughputMbps > 0 {
			thr = fmt.Sprintf("≥ %g Mbit/s", p.MinThroughputMbps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%g → %g %%\t%s\t%s\n", p.ID, strings.Join(pts, ", "), p.Loss.Optimal, p.Loss.Unacceptable, thr, p.Name)
	}
	tw.Flush()
	if *describe {
		for _, p := range f.Profiles {
			fmt.Fprintf(stdout, "\n%s: %s\n", p.ID, p.Description)
		}
	}
	return exitOK
}
