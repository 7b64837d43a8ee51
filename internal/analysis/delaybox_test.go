package analysis

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// TestDelayBoxesAverageEachQuantileByHand: study A's delay box of a stack
// on a network and swept values has each quantile averaged over its
// repetitions. By hand, tcp on wifi at loss 1%, three repetitions with
// (p5, p25, p50, p75, p95) = (1, 2, 3, 4, 5), (3, 4, 5, 6, 7), (2, 3, 4,
// 5, 12): (2, 3, 4, 5, 8). At loss 5% one repetition is its own box;
// quic at 1% has p95 NaN in one repetition: its p95 is NaN (the report
// leaves that box out, as it always did), its p50 (10 + 20) / 2 = 15.
func TestDelayBoxesAverageEachQuantileByHand(t *testing.T) {
	row := func(loss, proto string, q ...float64) results.Summary {
		var f []results.Field
		for i, name := range delayBoxQuantiles {
			f = append(f, results.Field{Name: name, Value: q[i]})
		}
		return results.Summary{Profile: "wifi", Protocol: proto, Params: []results.Param{{Key: "profile.loss", Value: loss}}, Fields: f}
	}
	rows := []results.Summary{
		row("1%", "tcp", 1, 2, 3, 4, 5), row("1%", "tcp", 3, 4, 5, 6, 7), row("5%", "tcp", 9, 9, 9, 9, 9),
		row("1%", "tcp", 2, 3, 4, 5, 12),
		row("1%", "quic", 1, 5, 10, 15, 20), row("1%", "quic", 1, 5, 20, 25, math.NaN()),
	}
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, DelayBoxStep)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		params, proto string
		want          DelayBox
	}{
		{"1%", "tcp", DelayBox{N: 3, P5: 2, P25: 3, P50: 4, P75: 5, P95: 8}},
		{"5%", "tcp", DelayBox{N: 1, P5: 9, P25: 9, P50: 9, P75: 9, P95: 9}},
	} {
		if got, ok := a.DelayBoxOf("wifi", c.params, c.proto); !ok || got != c.want {
			t.Errorf("box of %s at %s = %+v (%v), want %+v", c.proto, c.params, got, ok, c.want)
		}
	}
	q, ok := a.DelayBoxOf("wifi", "1%", "quic")
	if !ok || q.N != 2 || q.P50 != 15 || q.P75 != 20 || !math.IsNaN(q.P95) {
		t.Errorf("quic's box = %+v (%v), want n 2, p50 15, p75 20, p95 NaN", q, ok)
	}
	if _, ok := a.DelayBoxOf("ethernet", "1%", "tcp"); ok {
		t.Error("a box on a network the run lacks")
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, DelayBoxFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "network,params,protocol,n,delay_p5_ms,delay_p25_ms,delay_p50_ms,delay_p75_ms,delay_p95_ms\n" +
		"wifi,1%,tcp,3,2,3,4,5,8\nwifi,5%,tcp,1,9,9,9,9,9\nwifi,1%,quic,2,1,5,15,20,\n" // NaN is written empty (results.FormatValue)
	if string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", DelayBoxFile, b, want)
	}
}

// TestNoDelayBoxWithoutQuantiles: a run whose rows have no delay
// quantile (a pubsub run) gets no box and no file.
func TestNoDelayBoxWithoutQuantiles(t *testing.T) {
	rows := []results.Summary{{Profile: "wifi", Protocol: "mqtt", Fields: []results.Field{{Name: "completion_ms", Value: 3}}}}
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, DelayBoxStep)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.DelayBoxOf("wifi", "", "mqtt"); ok {
		t.Error("a box from rows without delay quantiles")
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DelayBoxFile)); !os.IsNotExist(err) {
		t.Errorf("%s written without boxes (%v)", DelayBoxFile, err)
	}
}

// TestRunsSideBySideHaveTheirDelayBoxes: tlab compare draws delay_box over
// the runs' rows side by side, each run's cells apart by their swept value
// "run": run a's p50 3 and 5 → 4, run b's 10 alone.
func TestRunsSideBySideHaveTheirDelayBoxes(t *testing.T) {
	var runs []NamedRun
	var merged []results.Summary
	for _, r := range []struct {
		name string
		p50s []float64
	}{{"a", []float64{3, 5}}, {"b", []float64{10}}} {
		var rows []results.Summary
		for _, v := range r.p50s {
			row := results.Summary{Profile: "wifi", Protocol: "tcp", Fields: []results.Field{{Name: "delay_p50_ms", Value: v}}}
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
	for run, want := range map[string]float64{"a": 4, "b": 10} {
		if got, ok := a.DelayBoxOf("wifi", run, "tcp"); !ok || got.P50 != want {
			t.Errorf("run %s: box %+v (%v), want p50 %v", run, got, ok, want)
		}
	}
}
