package main

import (
	"bytes"
	"strings"
	"testing"

	"tlab/internal/calibrate"
)

// TestEngineComparisonTable prints a made-up comparison and checks each
// figure's row carries both engines, the signed difference, its interval
// (none for a figure compared for sameness), the outcome and the target.
func TestEngineComparisonTable(t *testing.T) {
	met, unmet := true, false
	c := &calibrate.EngineComparison{
		Mode: "busy", Baseline: "mmsg", Candidate: "ring", Rounds: 6, Duration: 61,
		Figures: []calibrate.Compared{
			{Name: "forwarding_64B_pps", Unit: "pkt/s", Baseline: 250000, Candidate: 330000, Difference: 80000, Interval: [2]float64{40000, 120000}, Better: "higher", Outcome: "better", Target: ">= 1000000", CandidateMeets: &unmet},
			{Name: "added_latency_p99", Unit: "us", Baseline: 30, Candidate: 12.5, Difference: -17.5, Interval: [2]float64{-25, -3}, Better: "lower", Outcome: "better", Target: "<= 20", CandidateMeets: &met},
			{Name: "release_error_p999", Unit: "us", Baseline: 180, Candidate: 190, Difference: 10, Interval: [2]float64{-60, 90}, Better: "lower", Outcome: "same"},
			{Name: "loss_10pct", Unit: "%", Baseline: 9.4, Candidate: 9.4, Better: "same", Outcome: "same"},
		},
		Warnings: []string{"2 other tlab runs were live at the start"},
	}
	var out bytes.Buffer
	printEngineComparison(&out, c)
	text := out.String()
	rows := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	for name, want := range map[string][]string{
		"forwarding_64B_pps": {"pkt/s", "250000", "330000", "+80000", "[40000,", "120000]", "better", ">=", "1000000", "not", "met"},
		"added_latency_p99":  {"us", "30", "12.5", "-17.5", "[-25,", "-3]", "better", "<=", "20", "met"},
		"release_error_p999": {"us", "180", "190", "+10", "[-60,", "90]", "same"},
		"loss_10pct":         {"%", "9.4", "9.4", "+0", "same"},
	} {
		got := rows[name]
		if len(got) < len(want)+1 {
			t.Errorf("row %s: %q, want at least %q", name, got, want)
			continue
		}
		for i, w := range want {
			if got[i+1] != w {
				t.Errorf("row %s, column %d: %q, want %q (row %q)", name, i+1, got[i+1], w, got)
			}
		}
	}
	for _, want := range []string{"mmsg (baseline) against ring (candidate), 6 rounds", "MMSG", "RING", "WARNING: 2 other tlab runs"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
}
