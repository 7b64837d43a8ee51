package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tlab/internal/hostnoise"
	"tlab/internal/results"
	"tlab/internal/testbed/tbtest"
)

// TestVsEmulatorsScriptRunsTlabsSide runs scripts/vs-emulators as a user
// without mahimahi or Rattan would (one round of irtt, 1 s a run, tlab and
// the bare veth), then scripts/vs-emulators-summary: both are measured, each configured delay is what irtt saw, the jitter's
// standard deviation is the configured uniform's (J/√3), and the other
// emulators are absent rather than made up. docs/methodology.md's table
// comes from the same two scripts.
func TestVsEmulatorsScriptRunsTlabsSide(t *testing.T) {
	tbtest.RequirePrivileges(t)
	for _, tool := range []string{"irtt", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing on CI: scripts/setup --tests installs it", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	out := filepath.Join(t.TempDir(), "vs")
	cmd := exec.Command("../../scripts/vs-emulators", "--rounds", "1", "--only", "irtt", "--seconds", "1", "--emulators", "bare tlab", "--out", out)
	cmd.Env = append(os.Environ(), "TLAB="+buildTlab(t), "MAHIMAHI_BIN=", "RATTAN=")
	// The host's own noise while the script measures widens the bounds
	// below (tbtest.NoiseSlackMs: a stalled thread or emulator moves a
	// median and spreads a jitter by up to its wake-up tail), so that a
	// busy machine fails the test only where tlab is off, not the host.
	probe := hostnoise.Start()
	b, err := cmd.CombinedOutput()
	host := probe.Stop()
	if err != nil {
		t.Fatalf("vs-emulators: %v\n%s", err, b)
	}
	var noise results.Summary
	noise.Set("host_wakeup_p99_us", host.WakeP99Us)
	noise.Set("host_steal_pct", host.StealPct)
	slack := tbtest.NoiseSlackMs(50, noise)
	t.Logf("host wake-up p99 %.0f µs, steal %.1f %%: bounds widened by %.3f ms", host.WakeP99Us, host.StealPct, slack)
	csv, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"irtt,bare,0,d10j0,rtt_p50_ms,", "irtt,tlab,0,d50j2,up_sd_ms,", "irtt,tlab,0,d10j0,rtt_p99_ms,"} {
		if !strings.Contains(string(csv), want) {
			t.Errorf("results.csv has no %q:\n%s", want, csv)
		}
	}
	if strings.Contains(string(csv), "failed") || strings.Contains(string(csv), "mahimahi") || strings.Contains(string(csv), "rattan") || strings.Contains(string(csv), "tlab-sleep") {
		t.Errorf("results.csv has a failure or an emulator that was not given:\n%s", csv)
	}
	b, err = exec.Command("../../scripts/vs-emulators-summary", filepath.Join(out, "results.csv")).CombinedOutput()
	if err != nil {
		t.Fatalf("vs-emulators-summary: %v\n%s", err, b)
	}
	summary := string(b)
	// The added latency at the median is within a millisecond of nothing
	// for every row (the configured delay is what irtt saw); with ±2 ms
	// uniform jitter each direction's SD is near 2/√3 = 1.155 ms.
	jitterTable := false
	rows := 0
	for _, line := range strings.Split(summary, "\n") {
		if strings.HasPrefix(line, "The bare veth's own") {
			jitterTable = true
		}
		f := strings.Split(line, "|")
		if len(f) < 6 || !strings.HasSuffix(strings.TrimSpace(f[1]), "none") && !strings.HasSuffix(strings.TrimSpace(f[1]), "±2 ms") {
			continue
		}
		rows++
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(strings.Fields(strings.TrimSpace(f[i]))[0], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
		switch {
		case strings.Contains(line, "cannot"):
			t.Errorf("tlab could not do a row: %s", line)
		case !jitterTable && !(math.Abs(num(2)) <= 1+slack):
			t.Errorf("the median adds over a millisecond (and the host's %.3f ms) to the configured round trip: %s", slack, line)
		case jitterTable && strings.Contains(line, "±2 ms") && !(num(3) > 0.8 && num(3) < 1.6+slack && num(4) > 0.8 && num(4) < 1.6+slack):
			t.Errorf("±2 ms uniform jitter realised an SD away from 1.155 ms (beyond the host's %.3f ms): %s", slack, line)
		}
	}
	if rows != 8 {
		t.Errorf("%d rows of tlab's figures, want 4 configurations in each of two tables:\n%s", rows, summary)
	}
}
