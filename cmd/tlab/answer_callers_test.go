package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/experiment"
	"tlab/internal/qoo"
	"tlab/internal/report"
	"tlab/internal/results"
)

// answerRun writes a finished run of tcp and quic on 5g, three
// repetitions each, its records both joined and per cell, stating a
// requirement and a Quality of Outcome profile in its manifest.
func answerRun(t *testing.T) (string, []string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fixture")
	const profile = "control-loop-25ms"
	p, ok := qoo.Builtin().Lookup(profile)
	if !ok {
		t.Fatalf("no built-in profile %s", profile)
	}
	reqs := []string{"delay_p99_ms<=20"}
	header := "cell,warmup,error,delay_ms,resp_bytes,done_ms,interval_ms\n"
	var rows []results.Summary
	var joined strings.Builder
	joined.WriteString(header)
	for i, proto := range []string{"tcp", "quic"} {
		for rep := 1; rep <= 3; rep++ {
			cell := fmt.Sprintf("5g-%s-r%d", proto, rep)
			rows = append(rows, results.Summary{Cell: cell, Profile: "5g", Protocol: proto, Workload: "periodic", Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: 12 + 10*float64(i) + 0.1*float64(rep)}, {Name: "bytes_per_request", Value: 300}}})
			var recs strings.Builder
			recs.WriteString(header)
			for k := 0; k < 50; k++ {
				errText := ""
				if i == 1 && k == 7 {
					errText = "timeout"
				}
				fmt.Fprintf(&recs, "%s,%v,%s,%g,256,%d,25\n", cell, k < 3, errText, 5+float64(i)*8+float64(k%9), 25*k)
			}
			joined.WriteString(strings.TrimPrefix(recs.String(), header))
			if err := os.MkdirAll(results.CellDir(dir, cell), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(results.CellDir(dir, cell), results.RecordsFile), []byte(recs.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(joined.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "answer", Seed: 5, Started: time.Now(), Requirements: reqs, QoO: p.Wire()}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir, reqs, profile
}

// TestEveryCallerGivesTheSameAnswer: the run's analysis, a comparison of
// the run alone, the live view of it and tlab advise with the run's own
// requirement and profile answer alike, to the byte of the answers'
// JSON; so none of them assembles its own answer (which one that did
// would only match by copying the assembly). The comparison's answers
// name the run as a swept value, which is taken out first.
func TestEveryCallerGivesTheSameAnswer(t *testing.T) {
	dir, reqs, profile := answerRun(t)
	encode := func(who string, as []advise.Answer) string {
		b, err := json.MarshalIndent(as, "", " ")
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		return string(b)
	}
	opened, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Of(opened, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := encode("analysis", a.Answers)
	// The answer is not empty: a verdict per stack and an outcome each.
	if len(a.Answers) != 1 || len(a.Answers[0].Stacks) != 2 || a.Answers[0].Stacks[0].QoO == nil || len(a.Answers[0].Stacks[0].Checks) != 1 {
		t.Fatalf("the fixture's answer is not a whole one: %s", want)
	}

	ca, _, err := experiment.Compare([]string{dir}, filepath.Join(t.TempDir(), "cmp"), nil, nil, report.RenderComparison)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ca.Answers {
		ca.Answers[i].Params = strings.TrimPrefix(strings.TrimPrefix(ca.Answers[i].Params, filepath.Base(dir)), " / ")
	}
	live, err := report.Live(dir)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"advise", dir, "--qoo", profile, "--json"}
	for _, r := range reqs {
		args = append(args, "--require", r)
	}
	_, out, errs := run(args...)
	var advised []advise.Answer
	if err := json.Unmarshal([]byte(out), &advised); err != nil {
		t.Fatalf("tlab advise --json: %v\n%s%s", err, out, errs)
	}
	// advise's JSON read back loses NaN (null), so it is compared as it
	// prints: the analysis's answer through the same encoder.
	var wantAdvised []advise.Answer
	if err := json.Unmarshal([]byte(want), &wantAdvised); err != nil {
		t.Fatal(err)
	}
	for who, got := range map[string]string{
		"experiment.Compare": encode("compare", ca.Answers),
		"report.Live":        encode("live", live.Run.Answers),
	} {
		if got != want {
			t.Errorf("%s answers otherwise than the analysis:\n%s\nwant\n%s", who, got, want)
		}
	}
	if got, w := encode("advise", advised), encode("analysis read back", wantAdvised); got != w {
		t.Errorf("tlab advise answers otherwise than the analysis:\n%s\nwant\n%s", got, w)
	}
}
