package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
	"tlab/internal/scenario"
)

const mergeScenario = "name: m\nprofiles: [ethernet]\nprotocols: [tcp, h3, quic]\nworkload: {type: periodic}\nduration: 1s\nseed: 1\n"

// shardDir writes a shard's run directory as a sweep leaves it: the
// scenario as run, a manifest, and the given cells complete.
func shardDir(t *testing.T, yaml string, format int, host string, cells ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.ScenarioFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "m", Seed: 1, Hostname: host}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	if format != results.FormatVersion {
		// Save writes this tlab's format: rewrite it as another's.
		b, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
		b = []byte(strings.Replace(string(b), `"format": 2`, `"format": 1`, 1))
		os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644)
	}
	for _, id := range cells {
		cdir := results.CellDir(dir, id)
		os.MkdirAll(cdir, 0o755)
		row := results.Summary{Cell: id, Profile: "ethernet", Protocol: strings.Split(id, "_")[2], Rep: 1, Seed: 1,
			Fields: []results.Field{{Name: "delay_p50_ms", Value: 1.0}}}
		if err := results.WriteSummaries(cdir, []results.Summary{row}); err != nil {
			t.Fatal(err)
		}
		w, err := results.CreateRecords(filepath.Join(cdir, results.RecordsFile), results.Cell{ID: id, Profile: "ethernet", Protocol: row.Protocol, Rep: 1, Seed: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(results.Record{Seq: 0, SentMs: 1, DoneMs: 2, DelayMs: 1})
		w.Close()
		if err := results.MarkDone(cdir); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMergeRefusesWhatCannotBeOneRun: shards of another scenario or
// format, a cell in two shards and a non-empty output are refused, each
// with its own reason; disjoint shards merge in the scenario's order,
// each row naming its machine, and the cells no shard holds are named.
func TestMergeRefusesWhatCannotBeOneRun(t *testing.T) {
	sc, err := scenario.Parse("m.yaml", []byte(mergeScenario))
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := sc.Cells()
	if len(cells) != 3 {
		t.Fatalf("%d cells", len(cells))
	}
	id := func(i int) string { return cells[i].ID }
	a := shardDir(t, mergeScenario, results.FormatVersion, "alpha", id(2))
	b := shardDir(t, mergeScenario, results.FormatVersion, "beta", id(0))
	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644)
	for _, c := range []struct {
		dirs []string
		out  string
		want string
	}{
		{[]string{a, shardDir(t, strings.Replace(mergeScenario, "1s", "2s", 1), results.FormatVersion, "gamma", id(1))}, t.TempDir(), "ran another scenario"},
		{[]string{a, shardDir(t, mergeScenario, 1, "gamma", id(1))}, t.TempDir(), "results format 1"},
		{[]string{a, shardDir(t, mergeScenario, results.FormatVersion, "gamma", id(2))}, t.TempDir(), "is in both"},
		{[]string{a, b}, nonEmpty, "is not empty"},
	} {
		if _, err := Merge(c.dirs, c.out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
		}
	}
	out := filepath.Join(t.TempDir(), "merged")
	missing, err := Merge([]string{a, b}, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != id(1) {
		t.Errorf("missing %v, want [%s]", missing, id(1))
	}
	r, err := results.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Cell != id(0) || r.Rows[1].Cell != id(2) || r.Rows[0].Label("machine") != "beta" || r.Rows[1].Label("machine") != "alpha" {
		t.Errorf("merged rows %+v", r.Rows)
	}
	if b, err := os.ReadFile(filepath.Join(out, results.RecordsFile)); err != nil || strings.Count(string(b), "\n") != 3 {
		t.Errorf("merged records: %v\n%s", err, b)
	}
}
