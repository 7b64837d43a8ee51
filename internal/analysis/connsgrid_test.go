package analysis

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tlab/internal/results"
)

// connsRow is one cell of study A's HTTP/1.1 grid: swept interval and
// payload, the fields the grid reads.
func connsRow(network, proto, interval, payload string, iv, pl, conns, requests float64) results.Summary {
	return results.Summary{Profile: network, Protocol: proto,
		Params: []results.Param{{Key: "workload.interval", Value: interval}, {Key: "workload.payload", Value: payload}},
		Fields: []results.Field{{Name: "conns_per_1000", Value: conns}, {Name: "requests", Value: requests},
			{Name: "interval_ms", Value: iv}, {Name: "req_size", Value: pl}}}
}

// TestConnectionsGridByHand: connections per 1000 requests averaged by
// interval (columns) and payload (rows), both ascending. By hand, h1s on
// ethernet: (5 ms, 128 B) 100 and 200 → 150; (25 ms, 128 B) 50; (5 ms,
// 1024 B) NaN (not measured, left out) and 300 → 300 over n 1; (25 ms,
// 1024 B) no row → NaN, n 0. tcp kept one connection (1 per 1000 over
// 1000 requests = 1 connection, not more than one): no grid. The run asks
// for conns_heatmap@workload.interval=25ms too: over those rows alone, one
// column (25 ms) and one payload (128 B) → 50.
func TestConnectionsGridByHand(t *testing.T) {
	rows := []results.Summary{
		connsRow("ethernet", "h1s", "25ms", "128", 25, 128, 50, 1000),
		connsRow("ethernet", "h1s", "5ms", "128", 5, 128, 100, 1000),
		connsRow("ethernet", "h1s", "5ms", "1024", 5, 1024, math.NaN(), 1000),
		connsRow("ethernet", "h1s", "5ms", "128", 5, 128, 200, 1000),
		connsRow("ethernet", "h1s", "5ms", "1024", 5, 1024, 300, 1000),
		connsRow("ethernet", "tcp", "5ms", "128", 5, 128, 1, 1000),
		connsRow("ethernet", "tcp", "25ms", "128", 25, 128, 1, 1000),
	}
	dir := t.TempDir()
	m := &results.Manifest{Plots: []string{"conns_heatmap", "conns_heatmap@workload.interval=25ms", "delay_box@workload.payload=128"}}
	a, err := Only(&results.Run{Dir: dir, Manifest: m, Rows: rows}, ConnsGridStep)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := a.ConnsGridOf("ethernet", "", "h1s")
	if !ok {
		t.Fatal("no grid for h1s")
	}
	if !slices.Equal(g.Intervals, []float64{5, 25}) || !slices.Equal(g.Payloads, []float64{128, 1024}) {
		t.Fatalf("grid axes: intervals %v, payloads %v; want [5 25], [128 1024]", g.Intervals, g.Payloads)
	}
	if g.Means[0][0] != 150 || g.Means[0][1] != 50 || g.Means[1][0] != 300 || !math.IsNaN(g.Means[1][1]) {
		t.Errorf("means by payload then interval = %v, want [[150 50] [300 NaN]]", g.Means)
	}
	if !slices.Equal(g.N[0], []int{2, 1}) || !slices.Equal(g.N[1], []int{1, 0}) {
		t.Errorf("n = %v, want [[2 1] [1 0]]", g.N)
	}
	if _, ok := a.ConnsGridOf("ethernet", "", "tcp"); ok {
		t.Error("a grid for a stack that kept one connection")
	}
	f, ok := a.ConnsGridOf("ethernet", "workload.interval=25ms", "h1s")
	if !ok || !slices.Equal(f.Intervals, []float64{25}) || !slices.Equal(f.Payloads, []float64{128}) || f.Means[0][0] != 50 {
		t.Errorf("the grid at interval 25ms = %+v (%v), want one cell, 50", f, ok)
	}
	if _, ok := a.ConnsGridOf("ethernet", "workload.payload=128", "h1s"); ok {
		t.Error("a grid for fixed values only another kind asked for")
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ConnsGridFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "network,fixed,protocol,interval_ms,req_size,n,conns_per_1000\n" +
		"ethernet,,h1s,5,128,2,150\nethernet,,h1s,25,128,1,50\nethernet,,h1s,5,1024,1,300\nethernet,,h1s,25,1024,0,\n" +
		"ethernet,workload.interval=25ms,h1s,25,128,1,50\n"
	if string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", ConnsGridFile, b, want)
	}
}

// TestNoConnectionsGridWithoutTheFigure: rows without conns_per_1000 (a
// pubsub run) get no grid and no file.
func TestNoConnectionsGridWithoutTheFigure(t *testing.T) {
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: []results.Summary{{Profile: "wifi", Protocol: "mqtt"}}}, ConnsGridStep)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ConnsGridFile)); !os.IsNotExist(err) {
		t.Errorf("%s written without connections (%v)", ConnsGridFile, err)
	}
}
