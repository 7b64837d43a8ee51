package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tlab/internal/advise"
	"tlab/internal/results"
	_ "tlab/internal/workload" // registers the metrics the rows name
)

// row is a periodic cell's summary with the delay percentiles at p50.
func row(profile, protocol string, rep int, p50 float64, params ...results.Param) results.Summary {
	s := results.Summary{Cell: profile + "-" + protocol, Profile: profile, Protocol: protocol, Workload: "periodic", Rep: rep, Params: params}
	for _, f := range []struct {
		name string
		k    float64
	}{{"delay_p50_ms", 1}, {"delay_p99_ms", 2}, {"jitter_pct", 0.1}, {"bytes_per_request", 100}} {
		s.Set(f.name, p50*f.k)
	}
	return s
}

// writeRun writes a run directory of rows with manifest m.
func writeRun(t *testing.T, m *results.Manifest, rows []results.Summary) *results.Run {
	t.Helper()
	dir := t.TempDir()
	m.Started = time.Now()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAnalysisWritesWhatTheRunSays: a run that sweeps cross.flows from 0,
// with requirements, repeated four times, gets comparisons, load effects
// and answers, written into its directory; the answer follows the
// manifest's requirements unless others are given.
func TestAnalysisWritesWhatTheRunSays(t *testing.T) {
	var rows []results.Summary
	for rep := 1; rep <= 4; rep++ {
		for _, flows := range []string{"0", "2"} {
			load := 0.0
			if flows == "2" {
				load = 30
			}
			p := results.Param{Key: LoadKey, Value: flows}
			rows = append(rows, row("5g", "tcp", rep, 10+load+float64(rep)/10, p), row("5g", "quic", rep, 12+load+float64(rep)/10, p))
		}
	}
	run := writeRun(t, &results.Manifest{Scenario: "lul", Seed: 7, Params: []string{LoadKey}, Requirements: []string{"delay_p99_ms <= 30"}}, rows)
	a, err := Of(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Verdicts) == 0 || len(a.LoadComparisons) == 0 || len(a.Load) == 0 {
		t.Fatalf("verdicts %d, load %d/%d", len(a.Verdicts), len(a.Load), len(a.LoadComparisons))
	}
	for _, e := range a.Load {
		if e.AddedP50 < 29 || e.AddedP50 > 31 {
			t.Errorf("%s on %s: the load adds %.1f ms at p50, the rows say 30", e.Protocol, e.Network, e.AddedP50)
		}
	}
	if len(a.Requirements) != 1 || a.Requirements[0].Bound != 30 || len(a.Answers) == 0 {
		t.Fatalf("requirements %v, answers %v", a.Requirements, a.Answers)
	}
	if err := a.Write(run.Dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"comparisons.csv", "comparisons.json", "load.csv", "load.json", AnswersFile} {
		if _, err := os.Stat(filepath.Join(run.Dir, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
	var answers struct {
		Requirements []advise.Requirement `json:"requirements"`
	}
	b, _ := os.ReadFile(filepath.Join(run.Dir, AnswersFile))
	if err := json.Unmarshal(b, &answers); err != nil || len(answers.Requirements) != 1 || answers.Requirements[0].Metric != "delay_p99_ms" {
		t.Errorf("answers.json: %v %s", err, b)
	}
	// Requirements given replace the run's own.
	given := []advise.Requirement{{Metric: "delay_p50_ms", Op: "<=", Bound: 100}}
	if a, err := Of(run, given); err != nil || len(a.Requirements) != 1 || a.Requirements[0].Metric != "delay_p50_ms" {
		t.Errorf("given requirements: %v %v", a.Requirements, err)
	}
}

// TestAnalysisComparesAReplayWithItsPath: a remote run with its recording
// beside the real path gets replay.csv; the same rows without a remote
// manifest (two emulated networks) do not.
func TestAnalysisComparesAReplayWithItsPath(t *testing.T) {
	var rows []results.Summary
	for rep := 1; rep <= 4; rep++ {
		for _, p := range []string{"tcp", "quic"} {
			rows = append(rows, row(RealPath, p, rep, 20+float64(rep)), row("mypath", p, rep, 21+float64(rep)))
		}
	}
	m := &results.Manifest{Scenario: "r", Seed: 3, Remote: &results.Remote{Address: "far:7447"}}
	run := writeRun(t, m, rows)
	a, err := Of(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Replay) == 0 {
		t.Fatal("no replay comparison")
	}
	for _, c := range a.Replay {
		if c.A != RealPath || c.B != "mypath" {
			t.Errorf("replay compares %s with %s, want the path with its recording", c.A, c.B)
		}
	}
	if err := a.Write(run.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run.Dir, "replay.csv")); err != nil {
		t.Error("replay.csv was not written")
	}
	local := writeRun(t, &results.Manifest{Scenario: "l", Seed: 3}, rows)
	if a, err := Of(local, nil); err != nil || len(a.Replay) != 0 {
		t.Errorf("a run on emulated links got a replay comparison: %v", err)
	}
}
