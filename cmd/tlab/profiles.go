package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"tlab/internal/emu"
)

func runProfiles(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("profiles", "profiles [--json] [NAME[+NAME...]] [--link key=value,...]\n\nList the built-in link profiles (a network's delay, jitter, rate, queue and loss each way), or show\none profile, or a stack of them (wifi+loss-ge-b), with --link overrides applied on top.", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	md := fs.Bool("markdown", false, "print the built-in profiles as docs/guide.md's table")
	link := fs.String("link", "", "overrides applied on top, e.g. rate=50Mbit,up.loss=1%")
	names, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if *md {
		if *asJSON || len(names) > 0 {
			fmt.Fprintln(stderr, "tlab profiles: --markdown prints the whole table: give no NAME and no --json")
			return exitUsage
		}
		writeProfilesMarkdown(stdout)
		return exitOK
	}
	if len(names) == 0 {
		ps := emu.BuiltinProfiles()
		if *asJSON {
			return writeJSON(stdout, ps)
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tRTT\tUP RATE\tDOWN RATE\tLOSS\tDESCRIPTION")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\n", p.Name, p.Link.BaseRTT(), rateString(p.Link.Up.Rate), rateString(p.Link.Down.Rate), lossString(p.Link.Up), p.Description)
		}
		tw.Flush()
		fmt.Fprintln(stdout, "\nStack profiles with + (wifi+loss-ge-b); \"tlab profiles NAME\" shows one with its source.")
		return exitOK
	}
	ov, err := emu.ParseOverrides(*link)
	if err != nil {
		fmt.Fprintf(stderr, "tlab profiles: %v\n", err)
		return exitUsage
	}
	cfg, used, err := emu.ResolveLink(names[0], ov)
	if err != nil {
		fmt.Fprintf(stderr, "tlab profiles: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{"profiles": used, "link": cfg})
	}
	for _, p := range used {
		fmt.Fprintf(stdout, "%s: %s\n  source: %s\n", p.Name, p.Description, p.Source)
	}
	fmt.Fprintf(stdout, "\nresolved link (RTT %v):\n", cfg.BaseRTT())
	for _, d := range []struct {
		name string
		c    emu.DirectionConfig
	}{{"up (client to server)", cfg.Up}, {"down (server to client)", cfg.Down}} {
		jitter := jitterString(d.c)
		rate := rateString(d.c.Rate)
		if d.c.Trace != "" {
			rate = "the trace " + d.c.Trace + " from its start"
			if d.c.TracePhase == emu.TracePhaseRandom {
				rate = "the trace " + d.c.Trace + " from a seeded random point of its period"
			}
		}
		fmt.Fprintf(stdout, "  %s: delay %v, jitter %s, rate %s, queue %s, loss %s\n", d.name, d.c.Delay, jitter,
			rate, queueString(d.c, cfg), lossString(d.c))
		if tl := d.c.Timeline.Describe(); tl != "" {
			fmt.Fprintf(stdout, "    timeline: %s\n", tl)
		}
	}
	return exitOK
}

func writeJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitError
	}
	return exitOK
}

func rateString(r interface{ String() string }) string {
	if s := r.String(); s != "0" {
		return s
	}
	return "unlimited"
}

func lossString(d emu.DirectionConfig) string {
	var s string
	switch l := d.Loss; l.Model {
	case emu.LossBernoulli:
		s = l.Rate.String()
	case emu.LossGilbert:
		m, _ := l.ExpectedLoss()
		s = fmt.Sprintf("GE %.2f%%", m*100)
	case emu.LossOutages:
		s = fmt.Sprintf("outages of %v every %v on average", l.MeanOutage, l.MeanBetween+l.MeanOutage)
		if l.Rate > 0 {
			s += ", " + l.Rate.String() + " between"
		}
	}
	if w := d.WiFi; w.Enabled() {
		if s != "" {
			s += "+"
		}
		s += fmt.Sprintf("802.11 %.3g%%", w.ResidualLoss()*100)
	}
	if s == "" {
		return "none"
	}
	return s
}

// queueString says the queue the engine will give a direction, as
// emu.NewDirection sizes it: the bounds given, or else the discipline's
// own default, or else one bandwidth-delay product (of the trace's mean
// rate, for a rate trace); none without a rate limit.
func queueString(d emu.DirectionConfig, l emu.LinkConfig) string {
	switch {
	case d.QueuePackets > 0 && d.QueueBytes > 0:
		return fmt.Sprintf("%d packets and %d bytes", d.QueuePackets, int64(d.QueueBytes))
	case d.QueuePackets > 0:
		return fmt.Sprintf("%d packets", d.QueuePackets)
	case d.QueueBytes > 0:
		return fmt.Sprintf("%d bytes", int64(d.QueueBytes))
	case d.Rate == 0 && d.Trace == "":
		return "none (no rate limit)"
	}
	for _, k := range emu.QdiscKinds() {
		if k.Name == d.Queue.Name() && k.DefaultLimitPackets > 0 {
			return fmt.Sprintf("%d packets (%s's default)", k.DefaultLimitPackets, k.Name)
		}
	}
	if d.Trace != "" {
		return fmt.Sprintf("one bandwidth-delay product at the trace's mean rate (at least %d frames)", emu.QueueFloorPackets)
	}
	return fmt.Sprintf("%d bytes (one bandwidth-delay product)", d.QueueLimitBytes(d.Rate.BitsPerSecond(), l.BaseRTT()))
}
