package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/results"
	"tlab/internal/scenario"
)

// TestDisturbanceRule: the rule judges a cell by what it measures.
func TestDisturbanceRule(t *testing.T) {
	row := func(releaseUs, steal, stallUs float64) results.Summary {
		return results.Summary{Fields: []results.Field{{Name: "emu_release_p99_us", Value: releaseUs}, {Name: "host_steal_pct", Value: steal}, {Name: "host_wakeup_max_us", Value: stallUs}}}
	}
	normal, strict, off := cellrun.Quality{}, cellrun.Quality{Mode: "strict"}, cellrun.Quality{Mode: "off"}
	for _, c := range []struct {
		q        cellrun.Quality
		s        results.Summary
		medianMs float64
		want     string
	}{
		{normal, row(20, 0, 500), 0.7, ""},                         // 20 µs against a 0.7 ms median: 3 %
		{normal, row(100, 0, 500), 0.7, "release error p99"},       // 14 %
		{normal, row(100, 0, 500), 11, ""},                         // the same on 5G: 0.9 %
		{normal, row(10, 15, 0), 11, "stole 15.0 %"},               // steal
		{strict, row(300, 0, 0), 11, "release error p99 0.30"},     // 2.7 % > 2 %
		{strict, row(10, 0, 4000), 11, ""},                         // 4 ms: a wait behind tlab's own threads
		{strict, row(10, 0, 14000), 11, "the host stalled for 14"}, // over 10 ms and 25 % of 11 ms
		{off, row(5000, 50, 50000), 1, ""},
		// A host-noise probe that saw nothing: the host's noise is
		// unknown, which is not a quiet host.
		{normal, row(20, math.NaN(), math.NaN()), 0.7, "the host-noise probe saw nothing"},
		{strict, row(20, math.NaN(), math.NaN()), 11, "the host-noise probe saw nothing"},
	} {
		got := c.q.Disturbance(c.s, c.medianMs)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s rule, %v, median %.1f ms: %q, want %q", c.q.Mode, c.s.Fields, c.medianMs, got, c.want)
		}
	}
	if _, err := (cellrun.Quality{Mode: "lenient"}).Thresholds(); err == nil {
		t.Error("an unknown quality mode was accepted")
	}
}

// TestDisturbedCellsRunAgain: a cell judged disturbed is run again; every
// attempt's records stay with their attempt number, and the summary is the
// clean attempt's, saying how many were discarded. When no attempt is
// clean the least disturbed is reported, marked.
func TestDisturbedCellsRunAgain(t *testing.T) {
	requireRoot(t)
	sc, err := scenario.Parse("q.yaml", []byte("name: q\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 10\nwarmup: 0s\ncapture: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	attempts := 0
	firstDisturbed := cellrun.Quality{Mode: "normal", Judge: func(results.Summary, float64) string {
		attempts++
		// Tag each attempt's captures, to see which one the cell keeps.
		tagged, _ := filepath.Glob(filepath.Join(dir, "cells", "*", fmt.Sprintf("captures.attempt-%d", attempts)))
		for _, d := range tagged {
			if err := os.WriteFile(filepath.Join(d, "tag"), []byte(strconv.Itoa(attempts)), 0o644); err != nil {
				t.Error(err)
			}
		}
		if len(tagged) != 1 {
			t.Errorf("attempt %d: want its own capture directory, found %v", attempts, tagged)
		}
		if attempts == 1 {
			return "made up for the test"
		}
		return ""
	}}
	rows, err := Sweep{Scenario: sc, Dir: dir, SkipCalibration: true, Quality: firstDisturbed}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Int("attempt") != 2 || r.Int("attempts_discarded") != 1 || r.Label("quality") != "clean" || r.Int("requests") != 10 {
		t.Errorf("row: attempt %d, discarded %d, quality %q, %d requests", r.Int("attempt"), r.Int("attempts_discarded"), r.Label("quality"), r.Int("requests"))
	}
	// The captures are the reported attempt's, and only theirs.
	kept, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "captures"))
	if len(kept) != 1 {
		t.Fatalf("want one captures directory, found %v", kept)
	}
	if tag, err := os.ReadFile(filepath.Join(kept[0], "tag")); err != nil || string(tag) != "2" {
		t.Errorf("captures/ holds attempt %q's files (%v), want the reported attempt 2's", tag, err)
	}
	if fi, err := os.Stat(filepath.Join(kept[0], "client-eth0.pcap")); err != nil || fi.Size() == 0 {
		t.Errorf("reported attempt's pcap missing or empty (%v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "captures.attempt-*")); len(left) != 0 {
		t.Errorf("other attempts' captures left behind: %v", left)
	}
	recs := readCSV(t, filepath.Join(dir, "records.csv"))
	col := slices.Index(recs[0], "attempt")
	per := map[string]int{}
	for _, r := range recs[1:] {
		per[r[col]]++
	}
	if per["1"] != 10 || per["2"] != 10 {
		t.Errorf("records per attempt: %v, want 10 and 10", per)
	}

	always := cellrun.Quality{Mode: "normal", Judge: func(results.Summary, float64) string { return "always" }}
	rows, err = Sweep{Scenario: sc, Dir: filepath.Join(t.TempDir(), "run"), SkipCalibration: true, Quality: always}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Int("attempts_discarded") != 2 || !strings.HasPrefix(r.Label("quality"), "disturbed: always") {
		t.Errorf("never clean: discarded %d, quality %q", r.Int("attempts_discarded"), r.Label("quality"))
	}
}

func TestCalibrationWarning(t *testing.T) {
	pass := &results.Calibration{Verdict: "pass", Checks: []results.Check{{Name: "a", Pass: true}}}
	if w := CalibrationWarning(pass); w != "" {
		t.Errorf("a passing calibration warns: %q", w)
	}
	host := &results.Calibration{Verdict: "host", Checks: []results.Check{{Name: "release_error_5ms_p99", Value: 812, Unit: "us", Target: "<= 100", Host: "noise"}, {Name: "b", Pass: true}}}
	if w := CalibrationWarning(host); !strings.Contains(w, "failed 1 of 2 checks") || !strings.Contains(w, "release_error_5ms_p99 812 us") || !strings.Contains(w, "host's own noise") {
		t.Errorf("host warning: %q", w)
	}
	emu := &results.Calibration{Verdict: "emulator", Checks: []results.Check{{Name: "added_latency_p50", Value: 31, Interval: []float64{25, 39}, Unit: "us", Target: "<= 20"}}}
	if w := CalibrationWarning(emu); !strings.Contains(w, "emulator is less accurate") || !strings.Contains(w, "added_latency_p50 31 [25, 39] us (target <= 20)") {
		t.Errorf("emulator warning: %q", w)
	}
}

// TestShardFromEnv: auto/N takes the shard from a Kubernetes Indexed
// Job's index (from 0) or a Slurm array's task id (from 1), and says what
// is missing otherwise.
func TestShardFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		in   string
		env  map[string]string
		want string
	}{
		{"2/5", nil, "2/5"},
		{"auto/5", map[string]string{"JOB_COMPLETION_INDEX": "0"}, "1/5"},
		{"auto/5", map[string]string{"JOB_COMPLETION_INDEX": "4", "SLURM_ARRAY_TASK_ID": "9"}, "5/5"},
		{"auto/5", map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, "3/5"},
	} {
		got, err := ShardFromEnv(c.in, env(c.env))
		if err != nil || got != c.want {
			t.Errorf("%s with %v: %q, %v; want %s", c.in, c.env, got, err, c.want)
		}
	}
	if _, err := ShardFromEnv("auto/5", env(nil)); err == nil || !strings.Contains(err.Error(), "JOB_COMPLETION_INDEX") {
		t.Errorf("auto without an index: %v", err)
	}
	if _, err := ShardFromEnv("auto/5", env(map[string]string{"JOB_COMPLETION_INDEX": "x"})); err == nil {
		t.Error("a bad index was accepted")
	}
}

// TestSessionLabelsComeFromTheHandshakes: resumption and zero_rtt say what
// the connections after the first did, not what the settings allowed.
func TestSessionLabelsComeFromTheHandshakes(t *testing.T) {
	conn := func(id int, resumed, early bool) results.Record {
		return results.Record{ConnID: id, NewConn: true, Resumed: resumed, EarlyData: early}
	}
	for _, c := range []struct {
		name    string
		recs    []results.Record
		resumed any
		zeroRTT any
	}{
		{"one connection", []results.Record{conn(1, false, false), {ConnID: 1}}, "", ""},
		{"all resumed with 0-RTT", []results.Record{conn(1, false, false), conn(2, true, true), conn(3, true, true)}, true, true},
		{"resumed without 0-RTT", []results.Record{conn(1, false, false), conn(2, true, false)}, true, false},
		{"none resumed", []results.Record{conn(1, false, false), conn(2, false, false)}, false, ""},
		{"some resumed", []results.Record{conn(1, false, false), conn(2, true, false), conn(3, false, false)}, "true+false", false},
		{"a failed one does not count", []results.Record{conn(1, false, false), conn(2, true, false), {ConnID: 3, NewConn: true, Error: "timeout"}}, true, false},
	} {
		r, z := cellrun.SessionLabels(c.recs)
		if r != c.resumed || z != c.zeroRTT {
			t.Errorf("%s: resumption %v zero_rtt %v, want %v %v", c.name, r, z, c.resumed, c.zeroRTT)
		}
	}
}
