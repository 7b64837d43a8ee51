package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
	"tlab/internal/scenario"
)

// TestCompareJSON: tlab compare --json prints the comparison as one JSON
// object (the issue found --json missing from compare and merge), with
// the same answer and exit code as the table: tcp meets delay_p99_ms<=20
// on day 1 only (p99 12.1-12.3 ms, then 25.1-25.3 ms), h1s on day 2 only,
// so no stack meets it on both and the exit code is 1.
func TestCompareJSON(t *testing.T) {
	day1 := writeRun(t, map[string]float64{"tcp": 12, "h1s": 22}, "delay_p99_ms <= 20")
	day2 := writeRun(t, map[string]float64{"tcp": 25, "h1s": 15}, "delay_p99_ms <= 20")
	out := filepath.Join(t.TempDir(), "cmp")
	code, stdout, stderr := run("compare", day1, day2, "--out", out, "--json")
	if code != exitFailure {
		t.Errorf("exit %d, want %d (no stack meets it on both days): %s", code, exitFailure, stderr)
	}
	var got struct {
		Out          string   `json:"out"`
		Runs         []string `json:"runs"`
		Requirements []string `json:"requirements"`
		Met          *bool    `json:"met"`
		Answers      []struct {
			Profile string `json:"profile"`
		} `json:"answers"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if got.Out != out || len(got.Runs) != 2 || len(got.Requirements) != 1 || got.Met == nil || *got.Met || len(got.Answers) != 2 {
		t.Errorf("compare --json: %+v", got)
	}
	if strings.Contains(stdout, "Requirements:") {
		t.Errorf("--json also printed the table:\n%s", stdout)
	}
}

// TestMergeJSON: tlab merge --json names the merged directory, the shards
// and the cells no shard holds (one of the scenario's two here), with exit
// code 1 as without --json.
func TestMergeJSON(t *testing.T) {
	const yaml = "name: m\nprofiles: [ethernet]\nprotocols: [tcp, quic]\nworkload: {type: periodic}\nduration: 1s\nseed: 1\n"
	sc, err := scenario.Parse("m.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := sc.Cells()
	shard := t.TempDir()
	if err := os.WriteFile(filepath.Join(shard, results.ScenarioFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "m", Seed: 1, Hostname: "alpha"}).Save(shard); err != nil {
		t.Fatal(err)
	}
	c := cells[0]
	cdir := results.CellDir(shard, c.ID)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	row := results.Summary{Cell: c.ID, Profile: c.Profile, Protocol: c.Protocol, Rep: 1, Seed: 1, Fields: []results.Field{{Name: "delay_p50_ms", Value: 1.0}}}
	if err := results.WriteSummaries(cdir, []results.Summary{row}); err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateRecords(filepath.Join(cdir, results.RecordsFile), results.Cell{ID: c.ID, Profile: c.Profile, Protocol: c.Protocol, Rep: 1, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(results.Record{Seq: 0, SentMs: 1, DoneMs: 2, DelayMs: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := results.MarkDone(cdir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := run("merge", shard, "--out", out, "--no-report", "--json")
	if code != exitFailure {
		t.Errorf("exit %d, want %d (a cell in no shard): %s", code, exitFailure, stderr)
	}
	var got struct {
		Out     string   `json:"out"`
		Shards  []string `json:"shards"`
		Missing []string `json:"missing_cells"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if got.Out != out || len(got.Shards) != 1 || len(got.Missing) != 1 || got.Missing[0] != cells[1].ID {
		t.Errorf("merge --json: %+v, want the missing cell %s", got, cells[1].ID)
	}
}
