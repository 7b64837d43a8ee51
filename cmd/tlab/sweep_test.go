package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"tlab/internal/results"
	"tlab/internal/testbed/tbtest"
)

const sweepScenario = `name: resume-test
description: Six short cells.
profiles: [ethernet]
protocols: [tcp, h3]
workload:
  type: periodic
  interval: 20ms
  payload: 200
matrix:
  workload.interval: [10ms, 20ms, 40ms]
count: 40
warmup: 0s
plots: [delay_box, jitter_bars, bytes_bars, conns_heatmap, delay_cdf, timeseries]
`

// TestSweepResumesAfterKill kills tlab with SIGKILL in the middle of a
// sweep, resumes it, and checks that no cell is lost or duplicated, then
// that the report holds every plot and needs no network.
func TestSweepResumesAfterKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := buildTlab(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte(sweepScenario), 0o644)
	out := filepath.Join(dir, "run")

	// Quality off: the test counts each cell's records, which a re-run
	// on a busy day would double.
	cmd := exec.Command(bin, "run", file, "--out", out, "--no-calibration", "--quality", "off")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once two cells are whole and the third is under way.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		done, _ := filepath.Glob(filepath.Join(out, "cells", "*", "DONE"))
		started, _ := filepath.Glob(filepath.Join(out, "cells", "*", "records.csv"))
		if len(done) >= 2 && len(started) > len(done) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	done, _ := filepath.Glob(filepath.Join(out, "cells", "*", "DONE"))
	if len(done) < 2 || len(done) >= 6 {
		t.Fatalf("kill landed after %d complete cells; want a run in the middle", len(done))
	}
	keep := map[string]time.Time{}
	for _, d := range done {
		st, _ := os.Stat(d)
		keep[filepath.Dir(d)] = st.ModTime()
	}

	// A new run into the same directory must refuse without --resume.
	if code := exec.Command(bin, "run", file, "--out", out, "--no-calibration").Run(); code == nil {
		t.Fatal("a second run into a used directory was accepted")
	}
	res := exec.Command(bin, "run", "--resume", out, "--no-calibration")
	var stderr strings.Builder
	res.Stderr = &stderr
	if err := res.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "already complete") {
		t.Errorf("resume did not report the kept cells: %s", stderr.String())
	}
	defer func() {
		// Resuming a finished run runs nothing and takes no calibration.
		again := exec.Command(bin, "run", "--resume", out)
		msg, err := again.CombinedOutput()
		m, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
		var man struct{ Calibrations []any }
		json.Unmarshal(m, &man)
		if err != nil || !strings.Contains(string(msg), "nothing to run") || len(man.Calibrations) != 0 {
			t.Errorf("resuming a finished run: %v, %d calibrations, %s", err, len(man.Calibrations), msg)
		}
	}()
	// Complete cells were kept, not run again.
	for d, mt := range keep {
		st, err := os.Stat(filepath.Join(d, "DONE"))
		if err != nil || !st.ModTime().Equal(mt) {
			t.Errorf("cell %s was run again after the resume", filepath.Base(d))
		}
	}
	var rows []map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 6 {
		t.Fatalf("summary.json: %d rows (%v), want 6", len(rows), err)
	}
	cells := map[string]bool{}
	for _, r := range rows {
		id := r["cell"].(string)
		if cells[id] {
			t.Errorf("cell %s twice in the summary", id)
		}
		cells[id] = true
		if r["requests"].(float64) != 40 {
			t.Errorf("cell %s: %v requests, want 40", id, r["requests"])
		}
	}
	f, _ := os.Open(filepath.Join(out, "records.csv"))
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	perCell := map[string]int{}
	seen := map[string]bool{}
	seqCol := slices.Index(recs[0], "seq")
	for _, r := range recs[1:] {
		key := r[0] + "/" + r[seqCol] // cell, seq
		if seen[key] {
			t.Fatalf("record %s twice", key)
		}
		seen[key] = true
		perCell[r[0]]++
	}
	for id := range cells {
		if perCell[id] != 40 {
			t.Errorf("records.csv holds %d records of cell %s, want 40", perCell[id], id)
		}
	}
	if !slices.Contains(recs[0], "workload.interval") {
		t.Errorf("records.csv lacks the swept column: %v", recs[0])
	}
	// records.parquet holds the same records, after the resume too.
	if pf, err := os.Open(filepath.Join(out, "records.parquet")); err != nil {
		t.Error(err)
	} else {
		st, _ := pf.Stat()
		if pq, err := parquet.OpenFile(pf, st.Size()); err != nil {
			t.Errorf("records.parquet: %v", err)
		} else if pq.NumRows() != int64(len(recs)-1) {
			t.Errorf("records.parquet holds %d rows, records.csv %d", pq.NumRows(), len(recs)-1)
		}
		pf.Close()
	}

	// The report: every plot kind, every figure inlined, nothing remote.
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	figures := regexp.MustCompile(`<figure id="([a-z_]+)-`).FindAllStringSubmatch(string(html), -1)
	kinds := map[string]int{}
	for _, f := range figures {
		kinds[f[1]]++
	}
	for _, k := range []string{"delay_box", "jitter_bars", "bytes_bars", "delay_cdf", "timeseries"} {
		if kinds[k] == 0 {
			t.Errorf("report lacks a %s plot (has %v)", k, kinds)
		}
	}
	if n := strings.Count(string(html), `src="data:image/svg`); n != len(figures) {
		t.Errorf("%d figures but %d inlined SVG images", len(figures), n)
	}
	if regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//|<script|@import|url\(http`).Match(html) {
		t.Error("report.html references something outside itself")
	}
	for _, f := range figures {
		for _, ext := range []string{".svg", ".png"} {
			matches, _ := filepath.Glob(filepath.Join(out, "plots", f[1]+"-*"+ext))
			if len(matches) == 0 {
				t.Errorf("no %s file for %s", ext, f[1])
			}
		}
	}
	// tlab report regenerates it; tlab compare puts two runs side by side.
	if err := os.Remove(filepath.Join(out, "report.html")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "report", out).CombinedOutput(); err != nil {
		t.Fatalf("tlab report: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Fatal("tlab report did not write report.html")
	}
	cmpDir := filepath.Join(dir, "cmp")
	if o, err := exec.Command(bin, "compare", out, out, "--out", cmpDir).CombinedOutput(); err != nil {
		t.Fatalf("tlab compare: %v %s", err, o)
	}
	var merged []map[string]any
	b, _ = os.ReadFile(filepath.Join(cmpDir, "summary.json"))
	if json.Unmarshal(b, &merged); len(merged) != 12 {
		t.Errorf("comparison of two 6-cell runs has %d rows", len(merged))
	}
	// Its verdict table holds each run's own verdicts, labelled by run,
	// in comparisons.json and at the top of the report.
	var verdicts, own []map[string]any
	b, _ = os.ReadFile(filepath.Join(cmpDir, "comparisons.json"))
	json.Unmarshal(b, &verdicts)
	b, _ = os.ReadFile(filepath.Join(out, "comparisons.json"))
	json.Unmarshal(b, &own)
	if len(own) == 0 || len(verdicts) != 2*len(own) {
		t.Errorf("the comparison has %d verdicts; each run has %d", len(verdicts), len(own))
	}
	page, _ := os.ReadFile(filepath.Join(cmpDir, "report.html"))
	if len(verdicts) > 0 && (!strings.HasPrefix(verdicts[0]["params"].(string), filepath.Base(out)) || !strings.Contains(string(page), "<h2>Verdicts</h2>")) {
		t.Errorf("verdicts not labelled by run (%v) or not in the report", verdicts[0]["params"])
	}
}

// TestConcurrentRunsAreNamed: a run that shares the machine with another
// one says so for each cell that overlapped, naming the other run's
// process and directory, on the terminal, in the summary and in the report.
func TestConcurrentRunsAreNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := buildTlab(t)
	dir := t.TempDir()
	first := exec.Command(bin, "run", "--protocols", "tcp", "--profile", "ethernet", "--duration", "20s", "--warmup", "0s", "--no-calibration", "--out", filepath.Join(dir, "first"))
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Signal(syscall.SIGINT); first.Wait() }()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "first", "cells", "*", "records.csv")); len(m) > 0 {
			break
		}
	}
	second := filepath.Join(dir, "second")
	cmd := exec.Command(bin, "run", "--protocols", "tcp", "--profile", "ethernet", "--count", "20", "--interval", "10ms", "--warmup", "0s", "--no-calibration", "--out", second)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr.String())
	}
	want := fmt.Sprintf("pid %d (tlab run adhoc into %s)", first.Process.Pid, filepath.Join(dir, "first"))
	if !strings.Contains(stderr.String(), "warning: cell") || !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not name the other run (%s):\n%s", want, stderr.String())
	}
	if !strings.Contains(stdout.String(), "OTHER RUNS") {
		t.Errorf("the table does not show the overlap:\n%s", stdout.String())
	}
	// Failed and never-sent requests are separate columns, and the LATE
	// legend does not blame the protocol alone.
	for _, want := range []string{"ERRORS", "UNSENT", "SCHED P99 ms", "or the host"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, stdout.String())
		}
	}
	b, _ := os.ReadFile(filepath.Join(second, "summary.json"))
	var rows []map[string]any
	// At least the first run overlapped: tlab counts every run on the
	// host, and another one (a user's, another test suite's) may be live
	// too; the first run is named above by its pid.
	if json.Unmarshal(b, &rows); len(rows) != 1 {
		t.Errorf("summary: %v", rows)
	} else if n, _ := rows[0]["overlapping_runs"].(float64); !(n >= 1) {
		t.Errorf("summary: overlapping_runs %v, want at least 1 (the first run): %v", rows[0]["overlapping_runs"], rows)
	}
	html, _ := os.ReadFile(filepath.Join(second, "report.html"))
	if !strings.Contains(string(html), "Warning: cell") || !strings.Contains(string(html), fmt.Sprint(first.Process.Pid)) {
		t.Error("report.html does not warn about the overlap")
	}
}

// TestRunWithNoSuccessfulRequestFails: a run whose measured requests all
// failed (an outage covers the whole measured window) exits 1 and says
// which cell, instead of succeeding on nothing.
func TestRunWithNoSuccessfulRequestFails(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	code, _, errs := run("run", "--protocols", "tcp", "--profile", "ethernet", "--count", "3", "--interval", "200ms", "--warmup", "200ms",
		"--set", "link.outages=[{at: 150ms, for: 10s}]", "--set", "workload.timeout=300ms")
	if code != exitFailure || !strings.Contains(errs, "completed no request") {
		t.Errorf("exit %d, stderr %s", code, errs)
	}
}

// TestAdhocFlagErrorsSayWhatIsWrong: each bad ad-hoc input is refused
// before anything is built, with a message that names the problem.
func TestAdhocFlagErrorsSayWhatIsWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "-5s"}, "--duration -5s: must not be negative"},
		{[]string{"--link", "rate=-5Mbit"}, `bit rate "-5Mbit" is negative`},
		{[]string{"--protocols", "tcp,tcp"}, `protocol "tcp" is listed twice`},
		{[]string{"--duration", "1s", "--count", "5"}, "--duration and --count: give one, not both"},
		{[]string{"--payload", "100000000"}, "workload.payload 100000000 B: want 0 to 67108864 B"},
		{[]string{"--interval", "1us"}, "the scheduler keeps intervals of 1ms or more"},
		{[]string{"--interval", "1ms", "--duration", "2h"}, "a cell would hold 7202000 records"},
		{[]string{"--protocols", "tcp", "--0rtt"}, "settings.zero_rtt: none of tcp uses it"},
		{[]string{"--set", "workload.intervall=5ms"}, `unknown key "intervall"`},
	} {
		code, _, errs := run(append([]string{"run"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("tlab run %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	_, _, help := run("run", "--help")
	if strings.Contains(help, "(default -1)") || !strings.Contains(help, "-workload") {
		t.Errorf("run --help:\n%s", help)
	}
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(sweepScenario), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(sweepScenario, "count: 40", "count: 40\nrepetitons: 2", 1)), 0o644)
	if code, out, _ := run("validate", good); code != exitOK || !strings.Contains(out, "6 cells") {
		t.Errorf("validate good: %d %q", code, out)
	}
	code, _, errs := run("validate", bad)
	if code != exitUsage || !strings.Contains(errs, "bad.yaml:12") || !strings.Contains(errs, "repetitons") {
		t.Errorf("validate bad: %d %q", code, errs)
	}
	if code, _, errs := run("run", good, "--interval", "5ms"); code != exitUsage || !strings.Contains(errs, "--set") {
		t.Errorf("ad-hoc flag with a scenario: %d %q", code, errs)
	}
	if code, out, _ := run("presets"); code != exitOK || !strings.Contains(out, "study-a-short") || !strings.Contains(out, "suite of study-d-short-a, study-d-short-b") {
		t.Errorf("presets: %d %q", code, out)
	}
	// A suite validates part by part, and a bad override names its part.
	if code, out, _ := run("validate", "study-d-short"); code != exitOK || !strings.Contains(out, "study-d-short-b: valid") || !strings.Contains(out, "a valid suite of 2 scenarios") {
		t.Errorf("validate suite: %d %q", code, out)
	}
	if code, _, errs := run("validate", "study-d-short", "--set", "workload.qos=3"); code != exitUsage || !strings.Contains(errs, "qos 3") {
		t.Errorf("validate suite with a bad override: %d %q", code, errs)
	}
	// tlab k8s refuses a suite and writes a job for a part.
	if code, _, errs := run("k8s", "study-d-short", "--shards", "2", "--image", "x"); code != exitUsage || !strings.Contains(errs, "suite") {
		t.Errorf("k8s of a suite: %d %q", code, errs)
	}
	if code, out, _ := run("k8s", "study-d-short-b", "--shards", "3", "--image", "x"); code != exitOK || !strings.Contains(out, "completionMode: Indexed") || !strings.Contains(out, "auto/3") {
		t.Errorf("k8s of a part: %d %q", code, out)
	}
}

// TestShardsMergeIntoTheUnshardedRun runs a scenario as three shards, one
// process after another as three machines would, merges them, and compares
// the result with an unsharded run: the same cells with the same ids and
// seeds, every record once, the machines listed; merging a shard twice or
// leaving one out is refused or reported.
func TestShardsMergeIntoTheUnshardedRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := buildTlab(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	// sweepScenario's six cells with 10 requests each instead of 40: what
	// this test compares (which cells, their ids and seeds, each record
	// once, the machines) is the same at any count, and a record lost or
	// doubled in the merge shows in 60 as in 240. The cells' time, run
	// twice (shards and whole), drops from about 11 s to 3.
	const count = 10
	os.WriteFile(file, []byte(strings.Replace(sweepScenario, "count: 40", fmt.Sprintf("count: %d", count), 1)), 0o644)
	runEnv := func(env []string, out string, extra ...string) string {
		t.Helper()
		args := append([]string{"run", file, "--out", out, "--no-calibration", "--quality", "off", "--no-report"}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tlab %v: %v\n%s", args, err, o)
		}
		return string(o)
	}
	runTo := func(out string, extra ...string) { t.Helper(); runEnv(nil, out, extra...) }
	// Shard 1 named as I/N; shard 2 as a Kubernetes Indexed Job's pod
	// (index 1, from 0) and shard 3 as a Slurm array task would (3, from
	// 1) name theirs, with --shard auto/3.
	var shards []string
	for i, env := range [][]string{nil, {"JOB_COMPLETION_INDEX=1"}, {"SLURM_ARRAY_TASK_ID=3"}} {
		d := filepath.Join(dir, fmt.Sprintf("shard%d", i+1))
		shard := "auto/3"
		if env == nil {
			shard = "1/3"
		}
		runEnv(env, d, "--shard", shard, "--resume-existing")
		shards = append(shards, d)
	}
	// A retried task finds its shard's directory and continues it.
	if o := runEnv([]string{"JOB_COMPLETION_INDEX=1"}, shards[1], "--shard", "auto/3", "--resume-existing"); !strings.Contains(o, "continuing it") || !strings.Contains(o, "2 of 2 cells were already complete") {
		t.Errorf("a retried shard did not resume its directory:\n%s", o)
	}
	whole := filepath.Join(dir, "whole")
	runTo(whole)
	merged := filepath.Join(dir, "merged")
	if o, err := exec.Command(bin, append([]string{"merge", "--out", merged}, shards...)...).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, o)
	}
	read := func(d string) []map[string]any {
		var rows []map[string]any
		b, _ := os.ReadFile(filepath.Join(d, "summary.json"))
		json.Unmarshal(b, &rows)
		return rows
	}
	m, w := read(merged), read(whole)
	if len(m) != 6 || len(w) != 6 {
		t.Fatalf("merged %d rows, unsharded %d; want 6 each", len(m), len(w))
	}
	for i := range m {
		if m[i]["cell"] != w[i]["cell"] || m[i]["seed"] != w[i]["seed"] || m[i]["requests"] != w[i]["requests"] {
			t.Errorf("row %d: merged %v/%v/%v, unsharded %v/%v/%v", i, m[i]["cell"], m[i]["seed"], m[i]["requests"], w[i]["cell"], w[i]["seed"], w[i]["requests"])
		}
		if m[i]["machine"] == nil {
			t.Errorf("row %d does not say which machine measured it", i)
		}
	}
	recs := func(d string) int {
		f, _ := os.Open(filepath.Join(d, "records.csv"))
		defer f.Close()
		all, _ := csv.NewReader(f).ReadAll()
		return len(all) - 1
	}
	if recs(merged) != recs(whole) || recs(merged) != 6*count {
		t.Errorf("records: merged %d, unsharded %d, want %d", recs(merged), recs(whole), 6*count)
	}
	mb, _ := os.ReadFile(filepath.Join(merged, "manifest.json"))
	var man struct {
		Merged []struct{ Shard string } `json:"merged"`
	}
	json.Unmarshal(mb, &man)
	if len(man.Merged) != 3 {
		t.Errorf("manifest lists %d shards, want 3", len(man.Merged))
	}
	twice := exec.Command(bin, "merge", "--out", filepath.Join(dir, "twice"), shards[0], shards[0])
	var twiceErr strings.Builder
	twice.Stderr = &twiceErr
	var ee *exec.ExitError
	if err := twice.Run(); !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(twiceErr.String(), "is in both") {
		t.Errorf("a shard merged twice: %v, %s; want exit %d saying a cell is in both", err, twiceErr.String(), exitUsage)
	}
	cmd := exec.Command(bin, "merge", "--out", filepath.Join(dir, "partial"), shards[0], shards[1])
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "2 cells of the scenario in no shard") {
		t.Errorf("a missing shard: %v, %s", err, stderr.String())
	}
}

// TestSuiteResumesAfterInterrupt: a suite file of two scenario files runs
// each into its own directory; interrupted in its first part, it stops
// cleanly and says how to continue, and `tlab run --resume DIR` finishes
// the first part from where it stopped and runs the second, then writes
// the index.
func TestSuiteResumesAfterInterrupt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := buildTlab(t)
	dir := t.TempDir()
	part := "name: %s\nprofiles: [ethernet]\nprotocols: [tcp, tls]\nworkload: {type: periodic, interval: 10ms, payload: 64}\ncount: 50\nwarmup: 0s\n"
	os.MkdirAll(filepath.Join(dir, "parts"), 0o755)
	os.WriteFile(filepath.Join(dir, "parts", "first.yaml"), []byte(fmt.Sprintf(part, "first")), 0o644)
	os.WriteFile(filepath.Join(dir, "parts", "second.yaml"), []byte(fmt.Sprintf(part, "second")), 0o644)
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte("name: both\ndescription: two parts\nsuite: [parts/first.yaml, parts/second.yaml]\n"), 0o644)
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "run", suite, "--out", out, "--no-calibration", "--quality", "off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first part has finished a cell.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		done, _ := filepath.Glob(filepath.Join(out, "first", "cells", "*", "DONE"))
		if len(done) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the interrupted suite exited 0:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "tlab run --resume "+out) {
		t.Errorf("the interrupted suite does not say how to continue:\n%s", stderr.String())
	}
	o, err := exec.Command(bin, "run", "--resume", out, "--no-calibration").CombinedOutput()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, o)
	}
	if !strings.Contains(string(o), "cells were already complete") {
		t.Errorf("the resume did not continue the first part:\n%s", o)
	}
	for _, p := range []string{"first", "second"} {
		var rows []map[string]any
		b, _ := os.ReadFile(filepath.Join(out, p, "summary.json"))
		if json.Unmarshal(b, &rows); len(rows) != 2 {
			t.Errorf("part %s has %d rows, want 2", p, len(rows))
		}
	}
	// The index, written by the resume, keeps the suite's description.
	if b, err := os.ReadFile(filepath.Join(out, "index.html")); err != nil || !strings.Contains(string(b), `href="second/report.html"`) || !strings.Contains(string(b), "two parts") {
		t.Errorf("index.html: %v %s", err, b)
	}
}

// TestRequireFlagAnswersAndNoReportKeepsTheAnalysis drives two promises as
// a user would. `tlab run --require` on an ad-hoc run opens its output
// with the answer and keeps the requirement in the manifest and the
// answer in answers.json (the flag used to be dropped on its way to the
// run); `--no-report` writes no report.html but every file of the
// analysis step (comparisons, answers).
func TestRequireFlagAnswersAndNoReportKeepsTheAnalysis(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--protocols", "tcp,quic", "--profile", "ethernet", "--count", "40", "--interval", "10ms", "--warmup", "0s",
		"--no-calibration", "--quality", "off", "--out", out, "--no-report", "--require", "delay_p99_ms<=500", "--qoo", "control-loop-25ms")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlab run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "THE ANSWER") || !strings.Contains(stdout.String(), "Quality of Outcome against control-loop-25ms") {
		t.Errorf("the output does not open with the answer and the Quality of Outcome:\n%s", stdout.String())
	}
	m, err := results.ReadManifest(out)
	if err != nil || len(m.Requirements) != 1 || m.Requirements[0] != "delay_p99_ms <= 500" {
		t.Errorf("manifest requirements %v (%v)", m.Requirements, err)
	}
	if len(m.QoO) == 0 {
		t.Error("the manifest does not keep the --qoo profile")
	}
	var answers answersFile
	b, err := os.ReadFile(filepath.Join(out, "answers.json"))
	if err != nil || json.Unmarshal(b, &answers) != nil || len(answers.Requirements) != 1 || len(answers.Answers) != 1 {
		t.Fatalf("answers.json: %v %s", err, b)
	}
	for _, s := range answers.Answers[0].Stacks {
		if s.QoO == nil || s.QoO.Profile != "control-loop-25ms" || !(s.QoO.Score >= 0 && s.QoO.Score <= 100) {
			t.Errorf("answers.json: a stack's qoo %+v", s.QoO)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "comparisons.csv")); err != nil {
		t.Errorf("--no-report lost the comparisons: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err == nil {
		t.Error("--no-report wrote report.html")
	}
	// tlab report renders it afterwards, answer included.
	if o, err := exec.Command(bin, "report", out).CombinedOutput(); err != nil {
		t.Fatalf("tlab report: %v\n%s", err, o)
	}
	if page, _ := os.ReadFile(filepath.Join(out, "report.html")); !strings.Contains(string(page), "The answer") || !strings.Contains(string(page), "<b>control-loop-25ms</b>") {
		t.Error("the report built afterwards lacks the answer or its Quality of Outcome")
	}
}

// TestBulkTransferScoresTheThroughputStep drives study C's profile as a
// user would: a bulk download run on a fast link and on one below the
// profile's 4 Mbit/s (satellite, 1.5 Mbit/s), then tlab advise --qoo
// bulk-transfer. The draft's throughput component is a step: the slow
// link scores 0 whatever its latency, limited by the throughput; the fast
// one meets the minimum and is scored by its completion time.
func TestBulkTransferScoresTheThroughputStep(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	out := runScenarioText(t, bin, `name: bulk-qoo
profiles: [ethernet, satellite]
protocols: [tcp]
workload: {type: bulk, bytes: 256KiB, streams: 1, timeout: 60s}
warmup: 0s
`)
	cmd := exec.Command(bin, "advise", out, "--qoo", "bulk-transfer", "--json")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("tlab advise: %v\n%s", err, b)
	}
	var answers []struct {
		Profile string `json:"profile"`
		Stacks  []struct {
			QoO *struct {
				Score      float64 `json:"score"`
				Throughput float64 `json:"throughput"`
				Limit      string  `json:"limited_by"`
			} `json:"qoo"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal(b, &answers); err != nil || len(answers) != 2 {
		t.Fatalf("advise --json: %v\n%s", err, b)
	}
	for _, a := range answers {
		if len(a.Stacks) != 1 || a.Stacks[0].QoO == nil {
			t.Fatalf("%s: no score: %s", a.Profile, b)
		}
		q := a.Stacks[0].QoO
		switch a.Profile {
		case "ethernet":
			if q.Throughput != 100 || q.Score <= 0 || q.Limit == "throughput" {
				t.Errorf("ethernet, 1 Gbit/s: %+v, want the 4 Mbit/s minimum met and a score above 0", q)
			}
		case "satellite":
			if q.Throughput != 0 || q.Score != 0 || q.Limit != "throughput" {
				t.Errorf("satellite, 1.5 Mbit/s: %+v, want 0, limited by the throughput", q)
			}
		}
	}
	text, _ := exec.Command(bin, "advise", out, "--qoo", "bulk-transfer").Output()
	if !strings.Contains(string(text), "THROUGHPUT ≥ 4 Mbit/s") {
		t.Errorf("advise's table has no throughput column:\n%s", text)
	}
}

// TestControlLoopProfileFollowsTheSweptPeriod: one profile scores every
// swept interval against its own period, as study A's presets now ask
// (qoo: control-loop). On a 13.6 ms round trip a request every 10 ms is
// answered after its deadline (p99 beyond d: QoO 0), one every 50 ms well
// within half of it (p99 under 25 ms: QoO 100); the run's answers.json
// says so for each interval.
func TestControlLoopProfileFollowsTheSweptPeriod(t *testing.T) {
	tbtest.RequirePrivileges(t)
	out := runScenarioText(t, buildTlab(t), `name: loop-qoo
profiles: [cloud]
protocols: [tcp]
workload: {type: periodic, interval: 25ms, payload: 256}
matrix:
  workload.interval: [10ms, 50ms]
duration: 3s
warmup: 0s
qoo: control-loop
`)
	var got answersFile
	b, err := os.ReadFile(filepath.Join(out, "answers.json"))
	if err != nil || json.Unmarshal(b, &got) != nil || len(got.Answers) != 2 {
		t.Fatalf("answers.json: %v\n%s", err, b)
	}
	for _, a := range got.Answers {
		if len(a.Stacks) != 1 || a.Stacks[0].QoO == nil || a.Stacks[0].QoO.Profile != "control-loop" {
			t.Fatalf("%s: no control-loop score: %s", a.Params, b)
		}
		want := map[string]float64{"10ms": 0, "50ms": 100}[a.Params]
		if s := a.Stacks[0].QoO.Score; s != want {
			t.Errorf("interval %s: QoO %v, want %v against its own period", a.Params, s, want)
		}
	}
}

// runScenarioText runs the scenario text with tlab run as a user would
// (no calibration, no quality rule, no report) and returns its results
// directory.
func runScenarioText(t *testing.T, bin, text string) string {
	t.Helper()
	dir := t.TempDir()
	scen := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(scen, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmd := exec.Command(bin, "run", scen, "--no-calibration", "--quality", "off", "--out", out, "--no-report")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlab run: %v\n%s", err, stderr.String())
	}
	return out
}

// answersFile is what the tests read of a run's answers.json: the
// requirements, and each network's (and swept values') stacks with their
// Quality of Outcome.
type answersFile struct {
	Requirements []map[string]any `json:"requirements"`
	Answers      []struct {
		Params string `json:"params"`
		Stacks []struct {
			QoO *struct {
				Profile string  `json:"profile"`
				Score   float64 `json:"score"`
			} `json:"qoo"`
		} `json:"stacks"`
	} `json:"answers"`
}
