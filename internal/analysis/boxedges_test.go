package analysis

import (
	"math"
	"testing"

	"tlab/internal/results"
)

// TestTukeyWhiskersAtTheirEdges: a value exactly at a fence is within it
// (Tukey's whiskers reach "the furthest values within 1.5 IQR"; R's
// boxplot.stats marks a value out only when it is strictly beyond
// Q1 − 1.5 IQR or Q3 + 1.5 IQR), the fences are 1.5 IQR out on both
// sides, and a whisker never reaches inside the box. By hand, with type-7
// quartiles (h = (n−1)q):
//
//   - 1, 4, 5, 6, 9 (n = 5): Q1 = x(1) = 4, median 5, Q3 = x(3) = 6, IQR
//     2, fences 4 − 3 = 1 and 6 + 3 = 9: both ends lie on a fence, so the
//     whiskers are 1 and 9.
//   - −1, 4, 5, 6, 9: the same box; −1 is beyond the low fence 1 (it
//     would be within 3 IQR, 4 − 6 = −2): the low whisker is the smallest
//     value within, 4, the high 9.
//   - 0, 100, 100, 100 (n = 4): Q1 at h = 0.75: 75, median at h = 1.5:
//     100, Q3 at h = 2.25: 100; IQR 25, fences 37.5 and 137.5: 0 is
//     beyond, and the smallest value within, 100, lies inside the box
//     (above Q1): the whisker stays at Q1, 75.
func TestTukeyWhiskersAtTheirEdges(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Box
	}{
		{[]float64{9, 1, 5, 4, 6}, Box{N: 5, WhiskerLow: 1, Q1: 4, Median: 5, Q3: 6, WhiskerHigh: 9}},
		{[]float64{-1, 4, 5, 6, 9}, Box{N: 5, WhiskerLow: 4, Q1: 4, Median: 5, Q3: 6, WhiskerHigh: 9}},
		{[]float64{100, 0, 100, 100}, Box{N: 4, WhiskerLow: 75, Q1: 75, Median: 100, Q3: 100, WhiskerHigh: 100}},
	} {
		if got := Tukey(c.in); got != c.want {
			t.Errorf("Tukey(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestAConnectionsGridCountsConnectionsNotTheRate: a stack is on the
// heatmap when it opened more than one connection in a measured window
// (opensConnections): conns_per_1000 × requests / 1000 connections. By
// hand: 10 per 1000 over 100 requests is 1 connection (kept one: no
// grid), though its rate 10 is above 1.5; 2 per 1000 over 2000 requests
// is 4 connections (a grid, its one cell 2).
func TestAConnectionsGridCountsConnectionsNotTheRate(t *testing.T) {
	rows := []results.Summary{
		connsRow("ethernet", "h2", "5ms", "128", 5, 128, 10, 100),
		connsRow("ethernet", "h1s", "5ms", "128", 5, 128, 2, 2000),
	}
	a, err := Only(&results.Run{Dir: t.TempDir(), Rows: rows}, ConnsGridStep)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := a.ConnsGridOf("ethernet", "", "h2"); ok {
		t.Errorf("a grid for a stack that opened 1 connection (10 per 1000 of 100 requests): %+v", g)
	}
	g, ok := a.ConnsGridOf("ethernet", "", "h1s")
	if !ok || len(g.Means) != 1 || len(g.Means[0]) != 1 || !(math.Abs(g.Means[0][0]-2) <= 0) {
		t.Errorf("h1s, 4 connections (2 per 1000 of 2000 requests): grid %+v (%v), want one cell, 2", g, ok)
	}
}
