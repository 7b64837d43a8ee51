package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"tlab/internal/analysis"
	"tlab/internal/catalog"
	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/report"
	"tlab/internal/results"
	"tlab/internal/stacks"
	"tlab/internal/workload"
)

func runWorkloads(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("workloads", "workloads [--json]\n\nList the workload types, with their parameters and defaults (a scenario's workload: section).", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *asJSON {
		return writeJSON(stdout, workload.Types())
	}
	for _, t := range workload.Types() {
		fmt.Fprintf(stdout, "%s: %s\n", t.Name, t.Summary)
		if c, err := t.Needs(); err == nil {
			fmt.Fprintf(stdout, "  runs over protocols that can %s: %s\n", c, strings.Join(proto.NamesWith(c), ", "))
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		for _, p := range t.Params {
			fmt.Fprintf(tw, "  workload.%s\t%s\t%s\n", p.Name, p.Default, p.Doc)
		}
		tw.Flush()
		fmt.Fprintln(stdout)
	}
	return exitOK
}

func runMetrics(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("metrics", "metrics [--json | --markdown]\n\nList every summary column: name, kind, unit and definition. --markdown prints docs/metrics.md.", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	md := fs.Bool("markdown", false, "print docs/metrics.md, generated from the registries")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *md && *asJSON {
		fmt.Fprintln(stderr, "tlab metrics: give --json or --markdown, not both")
		return exitUsage
	}
	switch {
	case *md:
		if err := catalog.WriteMetricsMarkdown(stdout, metrics.Default); err != nil {
			return errorExit(stderr, err)
		}
		return exitOK
	case *asJSON:
		type row struct {
			Name, Kind, Unit, Definition string
		}
		var rows []row
		for _, m := range metrics.All() {
			rows = append(rows, row{m.Name, string(m.Kind), m.Unit, m.Definition})
		}
		return writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tUNIT\tDEFINITION")
	for _, m := range metrics.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, m.Kind, m.Unit, firstSentence(m.Definition))
	}
	tw.Flush()
	return exitOK
}

func runPlots(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plots", "plots [--json]\n\nList the plot kinds a scenario's plots: list may name, with the fields each needs.", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *asJSON {
		type plotInfo struct {
			Name  string   `json:"name"`
			Needs []string `json:"needs"`
			Doc   string   `json:"doc"`
		}
		out := []plotInfo{}
		for _, k := range report.PlotKinds() {
			out = append(out, plotInfo{k.Name, append([]string{}, k.Needs...), k.Doc})
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNEEDS\tWHAT")
	for _, k := range report.PlotKinds() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, strings.Join(k.Needs, ","), k.Doc)
	}
	tw.Flush()
	return exitOK
}

func runQueues(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("queues", "queues [--json]\n\nList the queue disciplines a link's queue: may name (link.queue: fq_codel, or a mapping with\nparameters), each with the parameters it takes and its source.", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	type queueInfo struct {
		Name   string   `json:"name"`
		Params []string `json:"params"`
		Doc    string   `json:"doc"`
		Source string   `json:"source"`
	}
	var out []queueInfo
	for _, k := range emu.QdiscKinds() {
		out = append(out, queueInfo{k.Name, k.Params, k.Doc, k.Source})
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	for _, q := range out {
		params := "no parameters"
		if len(q.Params) > 0 {
			params = "parameters: " + strings.Join(q.Params, ", ")
		}
		fmt.Fprintf(stdout, "%s (%s)\n    %s\n    source: %s\n", q.Name, params, q.Doc, q.Source)
	}
	return exitOK
}

func runProtocols(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("protocols", "protocols [FILE] [--json]\n\nList the protocols: what each can do (the capability a workload needs: tlab workloads),\nthe settings (a scenario's settings: section) each honours, and its stack. With a scenario FILE,\nalso the scenario's own stacks, given as commands.", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	type protocolInfo struct {
		Capabilities []proto.Capability `json:"capabilities"`
		Settings     []string           `json:"settings"`
		Doc          string             `json:"doc"`
		// Own says the stack is the scenario's own, given as commands.
		Own bool `json:"scenario_own,omitempty"`
	}
	out := map[string]protocolInfo{}
	for _, n := range proto.Names() {
		s, _ := proto.Lookup(n)
		out[n] = protocolInfo{Capabilities: s.Capabilities(), Settings: s.Options(), Doc: s.Doc()}
	}
	var own []string
	if len(pos) == 1 {
		sc, err := experiment.LoadScenario(pos[0], nil)
		if err != nil {
			fmt.Fprintf(stderr, "tlab protocols: %v\n", err)
			return exitUsage
		}
		own = append(own, stacks.Lines(sc)...)
		for _, n := range stacks.Names(sc) {
			st, _ := stacks.Command(sc, n)
			out[n] = protocolInfo{Own: true, Doc: fmt.Sprintf("the scenario's own, given as commands: server %q, client %q", st.Server, st.Client)}
		}
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROTOCOL\tCAN\tSETTINGS IT HONOURS")
	for _, n := range proto.Names() {
		caps := make([]string, 0, 2)
		for _, c := range out[n].Capabilities {
			caps = append(caps, string(c))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, strings.Join(caps, ", "), strings.Join(out[n].Settings, ", "))
	}
	tw.Flush()
	if len(own) > 0 {
		fmt.Fprintln(stdout, "\nThe scenario's own stacks:")
		for _, line := range own {
			fmt.Fprintln(stdout, "  "+line)
		}
	}
	fmt.Fprintln(stdout, "\nCapabilities:")
	for _, c := range proto.Capabilities() {
		fmt.Fprintf(stdout, "  %-17s %s\n", c, c.Doc())
	}
	d := proto.DefaultSettings()
	fmt.Fprintf(stdout, "\nDefaults: tls_version %s, key_exchange %s, resumption %v, zero_rtt %v, tcp_congestion %s, idle_timeout %v, h1_max_idle %d;\nquic windows 0 (quic-go's own). A setting none of a scenario's protocols honours is refused.\n",
		d.TLSVersion, d.KeyExchange, d.Resumption, d.ZeroRTT, d.Congestion, d.IdleTimeout, d.MaxIdle)
	return exitOK
}

func runStats(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("stats", "stats DIR [--json]\n\nIs A faster than B here? Compare every pair of protocols on each network and set of swept values of\na run: median difference with a bootstrap interval, Hodges-Lehmann shift, Mann-Whitney p-value with\nHolm's correction, Cliff's delta, and a verdict. Writes comparisons.json and comparisons.csv into DIR.", stderr)
	asJSON := fs.Bool("json", false, "print the comparisons as JSON")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab stats: give a results directory")
		return exitUsage
	}
	run, err := results.Open(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tlab stats: %v\n", err)
		return exitUsage
	}
	// The comparisons are the analysis's step, as a run's own: the same
	// figures as its comparisons.csv.
	a, err := analysis.Only(run, analysis.ComparisonsStep)
	if err == nil && !a.Compared() {
		err = fmt.Errorf("%s: no %s and no repeated cells: nothing to compare", pos[0], results.RecordsFile)
	}
	if err == nil {
		err = a.Write(pos[0])
	}
	if err != nil {
		return errorExit(stderr, err)
	}
	cs := a.Verdicts
	if *asJSON {
		b, err := os.ReadFile(filepath.Join(pos[0], "comparisons.json"))
		if err != nil {
			return errorExit(stderr, err)
		}
		stdout.Write(b)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NETWORK\tSWEPT\tMETRIC\tA\tB\tUNIT\tp (Holm)\tVERDICT")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Profile, c.Params, c.Metric, c.A, c.B, c.Unit, fmt.Sprintf("%.3g", c.PHolm), c.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\nComparisons in %s/comparisons.csv and comparisons.json (docs/metrics.md).\n", pos[0])
	return exitOK
}
