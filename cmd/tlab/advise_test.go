package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/advise"
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

// writeRecordsRun writes a finished run whose cells have records: per
// protocol, three repetitions of 200 requests with the delay delay(i)
// (NaN: failed).
func writeRecordsRun(t *testing.T, delay map[string]func(i int) float64) string {
	t.Helper()
	dir := t.TempDir()
	var rows []results.Summary
	for _, p := range []string{"tcp", "h1s"} {
		for rep := 1; rep <= 3; rep++ {
			id := fmt.Sprintf("%s%d", p, rep)
			cdir := results.CellDir(dir, id)
			if err := os.MkdirAll(cdir, 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := results.CreateRecords(filepath.Join(cdir, results.RecordsFile), results.Cell{ID: id, Profile: "5g", Protocol: p, Rep: rep}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				r := results.Record{Seq: i, DelayMs: delay[p](i), DoneMs: float64(i)}
				if math.IsNaN(r.DelayMs) {
					r.Error = "timeout"
				}
				w.Write(r)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := results.MarkDone(cdir); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, results.Summary{Cell: id, Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: delay[p](199)}}})
		}
	}
	if err := results.JoinRecords(dir); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	// Finished: a run in flight is read from its cells' own summaries,
	// which this fixture does not write.
	finished := time.Now()
	if err := (&results.Manifest{Scenario: "qoo", Seed: 1, Finished: &finished}).Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdviseScoresQualityOfOutcome drives tlab advise --qoo as a user
// would. Against control-loop-25ms (p99 optimal at 12.5 ms, unacceptable
// at 25; loss optimal at 0 %, unacceptable at 1 %): tcp answers every
// request in 10 ms, QoO 100; h1s has a p99 of 17.5 ms (latency 60) and
// loses 1 request in 200 (0.5 %: loss 50), QoO 50, limited by the loss,
// in every repetition.
// With no --require the answer is the scores alone and the exit code 0;
// a LibreQoS file is read as FILE#ID.
func TestAdviseScoresQualityOfOutcome(t *testing.T) {
	dir := writeRecordsRun(t, map[string]func(int) float64{
		"tcp": func(int) float64 { return 10 },
		"h1s": func(i int) float64 {
			switch {
			case i == 7:
				return math.NaN()
			case i >= 190:
				return 17.5
			}
			return 11
		},
	})
	code, out, errs := run("advise", dir, "--qoo", "control-loop-25ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	row := func(out, stack string) []string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[1] == stack {
				return f
			}
		}
		return nil
	}
	if f := row(out, "tcp"); len(f) < 4 || f[2] != "100" || f[3] != "100–100" {
		t.Errorf("tcp's row %q, want QoO 100 (100–100):\n%s", f, out)
	}
	if f := row(out, "h1s"); len(f) < 7 || f[2] != "50" || f[3] != "50–50" || f[4] != "60" || f[6] != "loss" {
		t.Errorf("h1s's row %q, want QoO 50 (50–50), latency 60, limited by the loss:\n%s", f, out)
	}
	code, out, _ = run("advise", dir, "--qoo", "control-loop-25ms", "--require", "delay_p99_ms<=20", "--json")
	var answers []advise.Answer
	if err := json.Unmarshal([]byte(out), &answers); err != nil || code != exitOK {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	for _, s := range answers[0].Stacks {
		want := map[string]float64{"tcp": 100, "h1s": 50}[s.Protocol]
		if s.QoO == nil || !(math.Abs(s.QoO.Score-want) <= 1e-6) || s.QoO.N != 3 || len(s.Checks) != 1 {
			t.Errorf("%s: %+v, want QoO %v over 3 repetitions beside its check", s.Protocol, s.QoO, want)
		}
	}
	file := filepath.Join(t.TempDir(), "qoo_profiles.json")
	os.WriteFile(file, []byte(`{"schema_version": 2, "profiles": [
	  {"id": "loose", "name": "Loose", "latency": [{"percentile": 99, "low_ms": 100, "high_ms": 20}], "loss_percent": {"low": 5, "high": 1}}]}`), 0o644)
	code, out, errs = run("advise", dir, "--qoo", file+"#loose")
	if f := row(out, "h1s"); code != exitOK || len(f) < 3 || f[2] != "100" {
		t.Errorf("a LibreQoS file: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run("advise", dir, "--qoo", "gaming"); code != exitUsage || !strings.Contains(errs, "control-loop-25ms") {
		t.Errorf("an unknown profile: exit %d, %s", code, errs)
	}
}

// TestCompareScoresQualityOfOutcomeOnEveryRun: tlab compare --qoo scores
// each stack of each run, from that run's records: a day when h1s lost
// a request in 200 (QoO 50) beside a day when it lost none (QoO 60).
func TestCompareScoresQualityOfOutcomeOnEveryRun(t *testing.T) {
	h1s := func(lose bool) func(int) float64 {
		return func(i int) float64 {
			switch {
			case lose && i == 7:
				return math.NaN()
			case i >= 190:
				return 17.5
			}
			return 11
		}
	}
	ten := func(int) float64 { return 10 }
	day1 := writeRecordsRun(t, map[string]func(int) float64{"tcp": ten, "h1s": h1s(true)})
	day2 := writeRecordsRun(t, map[string]func(int) float64{"tcp": ten, "h1s": h1s(false)})
	code, out, errs := run("compare", day1, day2, "--qoo", "control-loop-25ms", "--out", filepath.Join(t.TempDir(), "cmp"))
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var scores []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[len(f)-7] == "h1s" {
			scores = append(scores, f[len(f)-6])
		}
	}
	if len(scores) != 2 || scores[0] != "50" || scores[1] != "60" {
		t.Errorf("h1s scored %v on the two days, want 50 and 60:\n%s", scores, out)
	}
}
