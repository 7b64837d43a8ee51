package main

import (
	"strings"
	"testing"

	"tlab/internal/results"
	"tlab/internal/workload"
)

// The table's footnotes count cells, and a count of one reads in the
// singular: "1 cells were disturbed" was what a user of the quick preset
// saw.
func TestPrintRowsCountsCellsInTheFootnotes(t *testing.T) {
	row := func(cell string, discarded int, quality string) results.Summary {
		s := results.Summary{Cell: cell, Profile: "ethernet", Protocol: "tcp", Workload: "periodic"}
		s.Set("emu_release_p99_us", 20.0)
		s.Set("emu_cpu_s", 0.37)
		s.Set("attempts_discarded", discarded)
		s.Set("quality", quality)
		return s
	}
	var b strings.Builder
	printRows(&b, []results.Summary{
		row("a", 2, "disturbed: steal 30 %"),
		row("b", 0, "clean"),
		row("c", 0, "clean"),
	}, workload.Info{Type: "periodic"})
	out := b.String()
	for _, want := range []string{
		// The emulator's CPU seconds beside its release error, two
		// decimals (the metric's precision): 0.37 s as set.
		"EMU p99 us  EMU CPU s",
		"20       0.37",
		"RERUNS: 1 cell disturbed by the host and run again",
		"(!): 1 cell disturbed in every attempt",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table does not say %q:\n%s", want, out)
		}
	}

	b.Reset()
	printRows(&b, []results.Summary{
		row("a", 1, "disturbed: steal 30 %"),
		row("b", 3, "disturbed: wake-up p99 4 ms"),
	}, workload.Info{Type: "periodic"})
	if out := b.String(); !strings.Contains(out, "RERUNS: 2 cells disturbed") || !strings.Contains(out, "(!): 2 cells disturbed") {
		t.Errorf("two disturbed cells are not counted as two:\n%s", out)
	}
}
