package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestStatsCommand runs tlab stats on a run whose answers are known by
// hand: tcp's 100 delays are 10.00, 10.01, ... 10.99 ms, quic's the same
// plus 2 ms, h3's tcp's own. So tcp against quic differ by exactly 2 ms
// in median and in Hodges-Lehmann shift, the samples do not overlap
// (Cliff's delta ±1, Mann-Whitney U 0 or 10000, z = 5000/√(100·100·201/12)
// = 12.2, p about 1e-34), and the verdict says tcp is lower; tcp against
// h3 are the same sample (U = 5000, p = 1): no significant difference.
func TestStatsCommand(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	var rec strings.Builder
	rec.WriteString("cell,profile,protocol,seq,warmup,delay_ms\n")
	for _, p := range []struct {
		name  string
		shift float64
	}{{"tcp", 0}, {"quic", 2}, {"h3", 0}} {
		cell := "c_" + p.name
		rows = append(rows, results.Summary{Cell: cell, Profile: "5g", Protocol: p.name, Rep: 1, Workload: "periodic"})
		for i := range 100 {
			fmt.Fprintf(&rec, "%s,5g,%s,%d,false,%.4f\n", cell, p.name, i, 10+p.shift+float64(i)/100)
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "stats", Seed: 1}).Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "records.csv"), []byte(rec.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := run("stats", dir, "--json")
	if code != exitOK {
		t.Fatalf("tlab stats --json: exit %d, %s", code, errs)
	}
	var cs []map[string]any
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	byPair := map[string]map[string]any{}
	for _, c := range cs {
		if c["metric"] == "delay_ms" {
			byPair[c["a"].(string)+"/"+c["b"].(string)] = c
		}
	}
	num := func(c map[string]any, k string) float64 {
		v, ok := c[k].(float64)
		if !ok {
			t.Fatalf("%s is %v, not a number", k, c[k])
		}
		return v
	}
	tq := byPair["tcp/quic"]
	if tq == nil {
		t.Fatalf("no tcp/quic delay comparison in %v", byPair)
	}
	if d, hl := num(tq, "median_diff"), num(tq, "hodges_lehmann"); !(math.Abs(math.Abs(d)-2) <= 1e-9) || !(math.Abs(math.Abs(hl)-2) <= 1e-9) {
		t.Errorf("tcp/quic: median difference %v, Hodges-Lehmann %v; want 2 ms", d, hl)
	}
	if lo, hi := num(tq, "median_diff_ci_low"), num(tq, "median_diff_ci_high"); lo*hi <= 0 {
		t.Errorf("tcp/quic: interval %v to %v holds 0", lo, hi)
	}
	if u, cd, p := num(tq, "mann_whitney_u"), num(tq, "cliffs_delta"), num(tq, "p_holm"); (u != 0 && u != 10000) || math.Abs(cd) != 1 || !(p < 1e-30) {
		t.Errorf("tcp/quic: U %v, Cliff's delta %v, Holm p %v; want 0 or 10000, ±1, about 1e-34", u, cd, p)
	}
	if v := tq["verdict"].(string); !strings.HasPrefix(v, "tcp lower than quic by 2 ms") {
		t.Errorf("tcp/quic verdict %q", v)
	}
	th := byPair["tcp/h3"]
	if th == nil || num(th, "median_diff") != 0 || num(th, "mann_whitney_u") != 5000 || num(th, "p_value") != 1 || th["verdict"] != "no significant difference" {
		t.Errorf("tcp/h3, one sample twice: %v", th)
	}
	// The files and the table: comparisons.csv writes a tiny p with an
	// exponent; the table has a row per comparison.
	b, err := os.ReadFile(filepath.Join(dir, "comparisons.csv"))
	if err != nil || !strings.Contains(string(b), "e-3") {
		t.Errorf("comparisons.csv: %v\n%s", err, b)
	}
	code, out, _ = run("stats", dir)
	if code != exitOK || !strings.Contains(out, "NETWORK") || strings.Count(out, "\n5g") < 3 {
		t.Errorf("tlab stats: exit %d\n%s", code, out)
	}
	if code, _, errs := run("stats", filepath.Join(dir, "nothing")); code != exitUsage || errs == "" {
		t.Errorf("tlab stats on no run: exit %d, %q", code, errs)
	}
}
