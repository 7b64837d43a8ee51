package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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

	cmd := exec.Command(bin, "run", file, "--out", out, "--no-calibration")
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
	for _, r := range recs[1:] {
		key := r[0] + "/" + r[8] // cell, seq
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
	if code, out, _ := run("presets"); code != exitOK || !strings.Contains(out, "study-a-short") {
		t.Errorf("presets: %d %q", code, out)
	}
}
