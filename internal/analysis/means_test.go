package analysis

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestMeansOverRepetitionsByHand: a figure's mean over a stack's
// repetitions on one network and set of swept values, finite values only
// (NaN: not measured; +Inf: beyond any bound; no bar can show either).
// By hand, tcp on wifi at loss 1%: jitter_pct 1, 2, NaN and +Inf → (1 +
// 2) / 2 = 1.5 over n = 2; at loss 5%: 10 alone; quic at 1%: 4 and 6 → 5.
// A figure no repetition measured (bytes_per_request, all NaN) has no
// mean.
func TestMeansOverRepetitionsByHand(t *testing.T) {
	row := func(loss, proto string, rep int, jitter float64) results.Summary {
		return results.Summary{Cell: loss + proto, Profile: "wifi", Protocol: proto, Rep: rep,
			Params: []results.Param{{Key: "profile.loss", Value: loss}},
			Fields: []results.Field{{Name: "jitter_pct", Value: jitter}, {Name: "bytes_per_request", Value: math.NaN()}, {Name: "quality", Value: "clean"}}}
	}
	rows := []results.Summary{
		row("1%", "tcp", 1, 1), row("1%", "tcp", 2, 2), row("1%", "tcp", 3, math.NaN()), row("1%", "tcp", 4, math.Inf(1)),
		row("5%", "tcp", 1, 10), row("1%", "quic", 1, 4), row("1%", "quic", 2, 6),
	}
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, MeansStep)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		params, proto string
		want          float64
	}{{"1%", "tcp", 1.5}, {"5%", "tcp", 10}, {"1%", "quic", 5}} {
		if got, ok := a.MeanOf("wifi", c.params, c.proto, "jitter_pct"); !ok || got != c.want {
			t.Errorf("mean jitter_pct of %s at %s = %v (%v), want %v", c.proto, c.params, got, ok, c.want)
		}
	}
	if got, ok := a.MeanOf("wifi", "1%", "tcp", "bytes_per_request"); ok {
		t.Errorf("a figure never measured has mean %v", got)
	}
	if got, ok := a.MeanOf("wifi", "1%", "tcp", "quality"); ok {
		t.Errorf("a label has mean %v", got)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MeansFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "network,params,protocol,metric,n,mean\nwifi,1%,tcp,jitter_pct,2,1.5\nwifi,5%,tcp,jitter_pct,1,10\nwifi,1%,quic,jitter_pct,2,5\n"
	if string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", MeansFile, b, want)
	}
	if !strings.Contains(strings.Join(a.Files, ","), MeansFile) {
		t.Errorf("files written %v lack %s", a.Files, MeansFile)
	}
}

// TestRunsSideBySideHaveTheirMeans: a comparison of runs (tlab compare)
// draws the same bars from the rows side by side, each run's cells apart
// by their swept value "run": by hand, run a's tcp jitter 1 and 3 → 2,
// run b's 10 alone.
func TestRunsSideBySideHaveTheirMeans(t *testing.T) {
	var runs []NamedRun
	var merged []results.Summary
	for _, r := range []struct {
		name string
		vals []float64
	}{{"a", []float64{1, 3}}, {"b", []float64{10}}} {
		var rows []results.Summary
		for i, v := range r.vals {
			row := results.Summary{Cell: "c", Profile: "wifi", Protocol: "tcp", Rep: i + 1, Fields: []results.Field{{Name: "jitter_pct", Value: v}}}
			rows = append(rows, row)
			row.Params = []results.Param{{Key: "run", Value: r.name}}
			merged = append(merged, row)
		}
		runs = append(runs, NamedRun{Name: r.name, Given: r.name, Run: &results.Run{Dir: t.TempDir(), Rows: rows}})
	}
	a, err := OfRuns(runs, merged, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for run, want := range map[string]float64{"a": 2, "b": 10} {
		if got, ok := a.MeanOf("wifi", run, "tcp", "jitter_pct"); !ok || got != want {
			t.Errorf("run %s: mean jitter %v (%v), want %v", run, got, ok, want)
		}
	}
}
