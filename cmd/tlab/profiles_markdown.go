package main

import (
	"fmt"
	"io"
	"strings"

	"tlab/internal/emu"
)

// writeProfilesMarkdown writes the built-in profiles as the table in
// docs/guide.md: each figure from the profile the emulator runs, so that
// the guide cannot fall behind a profile's change (a test compares them).
func writeProfilesMarkdown(w io.Writer) {
	fmt.Fprintln(w, "| profile | what it is | RTT | rate up / down | jitter | queue up / down | loss | from (`tlab profiles NAME` for every source) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, p := range emu.BuiltinProfiles() {
		l := p.Link
		rtt, rate, queue := "overlay", "", ""
		if l.BaseRTT() > 0 || l.Up.Rate.BitsPerSecond() > 0 {
			rtt = l.BaseRTT().String()
			rate = bothWays(rateString(l.Up.Rate), rateString(l.Down.Rate))
			queue = bothWays(queueString(l.Up, l), queueString(l.Down, l))
		}
		from, _, _ := strings.Cut(firstSentence(p.Source), ":")
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p.Name, markdownCell(p.Description), rtt, rate,
			bothWays(jitterString(l.Up), jitterString(l.Down)), queue,
			bothWays(lossString(l.Up), lossString(l.Down)), markdownCell(from))
	}
}

// bothWays is one figure when both directions have it, else up / down.
func bothWays(up, down string) string {
	if up == down {
		return up
	}
	return up + " / " + down
}

func jitterString(d emu.DirectionConfig) string {
	if d.Jitter == 0 {
		return "none"
	}
	s := fmt.Sprintf("%v %s", d.Jitter, d.JitterDist)
	if d.JitterCorrelation > 0 {
		s += fmt.Sprintf(" (correlation %v)", d.JitterCorrelation)
	}
	if d.JitterCoherence > 0 {
		s += fmt.Sprintf(" (coherent over %v)", d.JitterCoherence)
	}
	return s
}

// markdownCell keeps a table cell in its cell: a | would end it.
func markdownCell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
