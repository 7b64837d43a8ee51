package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestAdviseExitCodes: tlab advise exits 0 when a stack meets every
// requirement on every network, 1 when not (as grep), 2 on a bad
// requirement, and says why.
func TestAdviseExitCodes(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for i, p := range []string{"tcp", "h1s"} {
		for rep := 1; rep <= 3; rep++ {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: 12 + 10*float64(i) + 0.1*float64(rep)}, {Name: "bytes_per_request", Value: 330 + 180*float64(i)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "advise", Seed: 1}).Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reqs []string
		code int
		want string
	}{
		{[]string{"delay_p99_ms<=20"}, exitOK, "5g: tcp meets every requirement"},
		{[]string{"delay_p99_ms<=30", "bytes_per_request<=400"}, exitOK, "h1s  fails"},
		{[]string{"delay_p99_ms<=5"}, exitFailure, "no stack meets every requirement"},
		{[]string{"delay_p99<=5"}, exitUsage, `no metric "delay_p99"`},
	} {
		args := []string{"advise", dir}
		for _, r := range c.reqs {
			args = append(args, "--require", r)
		}
		code, out, errs := run(args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, %s%s; want %d and %q", c.reqs, code, out, errs, c.code, c.want)
		}
	}
}

// writeRun writes a finished run of three repetitions per protocol on
// 5g, with the p99 delays given, stating requirements in its manifest.
func writeRun(t *testing.T, p99 map[string]float64, requirements ...string) string {
	t.Helper()
	dir := t.TempDir()
	var rows []results.Summary
	for _, p := range []string{"tcp", "h1s"} {
		for rep := 1; rep <= 3; rep++ {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: p99[p] + 0.1*float64(rep)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "day", Seed: 1, Requirements: requirements}).Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareAnswersAcrossRuns: tlab compare answers the requirements on
// every run and exits 0 only when one stack meets them on all of them: a
// different best on each day is no choice.
func TestCompareAnswersAcrossRuns(t *testing.T) {
	day1 := writeRun(t, map[string]float64{"tcp": 12, "h1s": 22}, "delay_p99_ms <= 20")
	day2 := writeRun(t, map[string]float64{"tcp": 25, "h1s": 15}, "delay_p99_ms <= 20")
	for _, c := range []struct {
		reqs []string
		code int
		want []string
	}{
		// The runs' own requirement: tcp is best on day 1, h1s on day 2.
		{nil, exitFailure, []string{"In short: no stack meets every requirement on both networks", "5g (" + filepath.Base(day1) + "): tcp meets", "5g (" + filepath.Base(day2) + "): h1s meets"}},
		{[]string{"delay_p99_ms<=30"}, exitOK, []string{"In short: tcp, h1s meet every requirement on both networks"}},
		{[]string{"delay_p99_ms<=24"}, exitOK, []string{"In short: h1s meets every requirement on both networks"}},
	} {
		out := filepath.Join(t.TempDir(), "cmp")
		args := []string{"compare", day1, day2, "--out", out}
		for _, r := range c.reqs {
			args = append(args, "--require", r)
		}
		code, stdout, stderr := run(args...)
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: lacks %q:\n%s%s", c.reqs, w, stdout, stderr)
			}
		}
		if code != c.code {
			t.Errorf("%v: exit %d, want %d", c.reqs, code, c.code)
		}
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil || !strings.Contains(string(page), "<h2>The answer</h2>") || !strings.Contains(string(page), "<b>In short:</b>") {
			t.Errorf("%v: the comparison's report lacks the answer (%v)", c.reqs, err)
		}
	}
	// The comparison's rows are each run's own, named by run: day 1's
	// tcp p99 is 12.1 to 12.3 ms, day 2's 25.1 to 25.3 ms.
	cmp := filepath.Join(t.TempDir(), "rows")
	if code, _, stderr := run("compare", day1, day2, "--out", cmp); code == exitUsage || code == exitError {
		t.Fatalf("compare: exit %d %s", code, stderr)
	}
	sums, err := results.ReadSummaries(filepath.Join(cmp, results.SummaryJSON), nil)
	if err != nil || len(sums) != 12 {
		t.Fatalf("the comparison holds %d rows (%v), want 6 of each run", len(sums), err)
	}
	for _, r := range sums {
		if r.Protocol != "tcp" {
			continue
		}
		lo, hi := 12.0, 12.35
		if strings.HasPrefix(r.Cell, filepath.Base(day2)+"/") {
			lo, hi = 25.0, 25.35
		} else if !strings.HasPrefix(r.Cell, filepath.Base(day1)+"/") {
			t.Errorf("row %s names neither run", r.Cell)
		}
		if v := r.Float("delay_p99_ms"); v < lo || v > hi {
			t.Errorf("row %s: tcp p99 %.2f ms, want its own run's %.1f to %.2f", r.Cell, v, lo, hi)
		}
	}
	// Runs that state different requirements give none to the comparison.
	other := writeRun(t, map[string]float64{"tcp": 12, "h1s": 22}, "delay_p99_ms <= 10")
	code, stdout, _ := run("compare", day1, other, "--out", filepath.Join(t.TempDir(), "cmp"))
	if code != exitOK || strings.Contains(stdout, "Requirements:") {
		t.Errorf("differing requirements: exit %d:\n%s", code, stdout)
	}
}
