package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// TestSeriesReducesEachCellsMeasuredRecords: the series step keeps a
// cell's measured records only (the warm-up's 100 ms, a failed record
// without a delay and one without a send time left out) and reduces them
// to what the report draws. By hand, cell a's measured delays 4 ms (sent
// at 0 s) and 2 ms (sent at 1 s): the CDF's 201 points run from the
// minimum 2 at fraction 0 through the median (2+4)/2 = 3 at 0.5 (type-7
// interpolation) to 4 at 1; over time the span 1 s cut into 40 bins of
// 0.025 s puts the first send in bin 0 (centre 0.0125 s) and the second
// in the last bin, 39 (centre 0.9875 s). Cell b's one delay 7 is its
// whole CDF.
func TestSeriesReducesEachCellsMeasuredRecords(t *testing.T) {
	dir := t.TempDir()
	recs := "cell,warmup,error,sent_ms,delay_ms\n" +
		"a,true,,0,100\n" + // warm-up
		"a,false,,0,4\n" +
		"a,false,timeout,500,\n" + // failed: no delay
		"a,false,,,9\n" + // no send time
		"a,false,,1000,2\n" +
		"b,false,,0,7\n"
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := OfView(NewView(&results.Run{Dir: dir}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := a.Series["a"], a.Series["b"]
	if ca == nil || cb == nil || len(a.Series) != 2 {
		t.Fatalf("series %v: want cells a and b", a.Series)
	}
	if len(ca.CDF) != 201 || ca.CDF[0] != (Point{2, 0}) || ca.CDF[100] != (Point{3, 0.5}) || ca.CDF[200] != (Point{4, 1}) {
		t.Errorf("a's CDF: %d points, first %v, middle %v, last %v; want 201 from (2, 0) through (3, 0.5) to (4, 1)",
			len(ca.CDF), ca.CDF[0], ca.CDF[min(100, len(ca.CDF)-1)], ca.CDF[len(ca.CDF)-1])
	}
	const eps = 1e-9
	if len(ca.Series) != 2 || abs(ca.Series[0].X-0.0125) > eps || ca.Series[0].Y != 4 || abs(ca.Series[1].X-0.9875) > eps || ca.Series[1].Y != 2 {
		t.Errorf("a over time: %v, want (0.0125, 4) and (0.9875, 2)", ca.Series)
	}
	if cb.CDF[0].X != 7 || cb.CDF[200].X != 7 {
		t.Errorf("b's CDF %v..%v, want 7 throughout", cb.CDF[0], cb.CDF[len(cb.CDF)-1])
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestSeriesKeepsEachBinsPeak: a median per time bin hides a spike, so
// each bin's largest delay is kept beside it. By hand: sends at 0, 10 and
// 20 ms with delays 1, 50 and 2 ms fall in the first of 40 bins of a 1 s
// span (0.025 s each): median 2, peak 50; the send at 1 s (delay 3) is
// the last bin's median and peak.
func TestSeriesKeepsEachBinsPeak(t *testing.T) {
	cs := reduceSeries([]float64{1, 50, 2, 3}, []Point{{0, 1}, {0.010, 50}, {0.020, 2}, {1, 3}})
	if len(cs.Series) != 2 || cs.Series[0].Y != 2 || cs.Series[1].Y != 3 {
		t.Errorf("medians over time %v, want 2 then 3", cs.Series)
	}
	if len(cs.Peaks) != 2 || cs.Peaks[0].Y != 50 || cs.Peaks[1].Y != 3 || cs.Peaks[0].X != cs.Series[0].X {
		t.Errorf("peaks over time %v, want 50 then 3 at the medians' times %v", cs.Peaks, cs.Series)
	}
}

// TestSeriesTailIsTheComplementaryDistribution: the CCDF of the delays
// 1..1000 ms, by hand with type-7 quantiles (h = (n−1)q): at exceedance
// 1 the minimum, 1 ms; at 0.01 (q 0.99, h 989.01) 990 + 0.01 = 990.01 ms;
// at 0.001, one record in 1000 and the last point (h 998.001), 999.001 ms.
// Ten points a decade over three decades: 31 points.
func TestSeriesTailIsTheComplementaryDistribution(t *testing.T) {
	delays := make([]float64, 1000)
	for i := range delays {
		delays[i] = float64(i + 1)
	}
	cs := reduceSeries(delays, nil)
	if len(cs.CCDF) != 31 {
		t.Fatalf("%d CCDF points, want 31: %v", len(cs.CCDF), cs.CCDF)
	}
	const eps = 1e-9
	for _, c := range []struct {
		i    int
		x, p float64
	}{{0, 1, 1}, {20, 990.01, 0.01}, {30, 999.001, 0.001}} {
		if got := cs.CCDF[c.i]; abs(got.X-c.x) > eps || abs(got.Y-c.p) > eps {
			t.Errorf("CCDF point %d = %v, want (%v, %v)", c.i, got, c.x, c.p)
		}
	}
}

// TestSamplesAreThinnedEvenly: ten records fit a limit of ten whole; at a
// limit of four the stride is ceil(10/4) = 3, keeping records 0, 3, 6 and 9.
func TestSamplesAreThinnedEvenly(t *testing.T) {
	var pts []Point
	for i := range 10 {
		pts = append(pts, Point{X: float64(i), Y: float64(i)})
	}
	if got := thin(pts, 10); len(got) != 10 {
		t.Errorf("thin to 10 kept %d", len(got))
	}
	got := thin(pts, 4)
	if len(got) != 4 || got[0].X != 0 || got[1].X != 3 || got[2].X != 6 || got[3].X != 9 {
		t.Errorf("thin to 4: %v, want records 0, 3, 6, 9", got)
	}
}
