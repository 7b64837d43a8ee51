package report

import (
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// TestCDFTakesALogAxisWhenDelaysSpanADecade: a 60 ms outlier beside
// 1-3 ms delays (a span of 60x) puts the CDF's delay axis on a log scale,
// where delays of 1 to 3 ms (3x) keep a linear one; a delay of 0, which a
// log axis cannot place, is dropped from the log plot only.
func TestCDFTakesALogAxisWhenDelaysSpanADecade(t *testing.T) {
	narrow := map[string]plotter.XYs{"tcp": {{X: 1, Y: 0}, {X: 2, Y: 0.5}, {X: 3, Y: 1}}}
	wide := map[string]plotter.XYs{"tcp": {{X: 0, Y: 0}, {X: 1, Y: 0.1}, {X: 2, Y: 0.5}, {X: 60, Y: 1}}}
	for _, c := range []struct {
		name string
		pts  map[string]plotter.XYs
		log  bool
	}{{"1-3 ms", narrow, false}, {"0-60 ms", wide, true}} {
		pl, _, caption, err := recordPlot(viewCDF, []string{"tcp"}, c.pts, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, isLog := pl.X.Scale.(plot.LogScale)
		if isLog != c.log {
			t.Errorf("%s: log delay axis %v, want %v (caption %q)", c.name, isLog, c.log, caption)
		}
	}
	if got := positiveX(wide)["tcp"]; len(got) != 3 || got[0].X != 1 {
		t.Errorf("points a log axis keeps: %v, want the three with a delay above 0", got)
	}
}

// TestTailPlotIsLogLog: the CCDF's both axes are logarithmic, so that
// 0.01 (p99) and 0.001 (p99.9) are as far apart as 0.1 and 0.01.
func TestTailPlotIsLogLog(t *testing.T) {
	pl, _, _, err := recordPlot(viewCCDF, []string{"tcp"}, map[string]plotter.XYs{"tcp": {{X: 1, Y: 1}, {X: 5, Y: 0.01}, {X: 9, Y: 0.001}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, xLog := pl.X.Scale.(plot.LogScale)
	_, yLog := pl.Y.Scale.(plot.LogScale)
	if !xLog || !yLog {
		t.Errorf("CCDF axes: x log %v, y log %v; want both", xLog, yLog)
	}
}

// TestOverTimeDrawsEachBinsPeak: the delay over time draws, beside each
// protocol's line of medians, its bins' peaks as dots at their values: the
// axis reaches a 60 ms spike that the medians (2 ms) do not.
func TestOverTimeDrawsEachBinsPeak(t *testing.T) {
	medians := map[string]plotter.XYs{"tcp": {{X: 0.5, Y: 2}, {X: 1.5, Y: 2}}}
	peaks := map[string]plotter.XYs{"tcp": {{X: 0.5, Y: 60}, {X: 1.5, Y: 3}}}
	pl, _, _, err := recordPlot(viewOverTime, []string{"tcp"}, medians, peaks)
	if err != nil {
		t.Fatal(err)
	}
	// The medians reach 2 ms; only the dots take the axis to 60.
	if pl.Y.Max < 60 {
		t.Errorf("the delay axis ends at %v: the 60 ms peak is not drawn", pl.Y.Max)
	}
}

// TestLogTicksLabelOneTwoFive: a log axis from 8 to 60 ms is labelled at
// 10, 20 and 50 (1, 2, 5 times a power of ten) and marked, unlabelled, at
// 8, 9, 30, 40 and 60; from 0.001 to 1 at 0.001, 0.002, 0.005, ... 1.
func TestLogTicksLabelOneTwoFive(t *testing.T) {
	labels := func(ts []plot.Tick) (labelled []string, marks int) {
		for _, tk := range ts {
			if tk.Label != "" {
				labelled = append(labelled, tk.Label)
			} else {
				marks++
			}
		}
		return labelled, marks
	}
	got, marks := labels(ticks125{}.Ticks(8, 60))
	if want := []string{"10", "20", "50"}; !slices.Equal(got, want) || marks != 5 {
		t.Errorf("ticks 8..60: labels %v and %d unlabelled, want %v and 5", got, marks, want)
	}
	got, _ = labels(ticks125{}.Ticks(0.001, 1))
	if want := []string{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}; !slices.Equal(got, want) {
		t.Errorf("ticks 0.001..1: labels %v, want %v", got, want)
	}
}

// TestLoadAndLatencyShareOneTimeAxis: the latency-under-load view's two
// panels run over one time range (the load from 0 to 10 s, the delays
// from 1 to 9 s: both 0 to 10), the load from 0, and the delay panel
// reaches the largest sample (80 ms) though the bins' medians stay at 5.
func TestLoadAndLatencyShareOneTimeAxis(t *testing.T) {
	rate := plotter.XYs{{X: 0, Y: 20}, {X: 10, Y: 25}}
	cs := &cellSeries{series: plotter.XYs{{X: 1, Y: 5}, {X: 9, Y: 5}}, samples: plotter.XYs{{X: 1, Y: 4}, {X: 5, Y: 80}, {X: 9, Y: 6}}}
	load, latency, err := loadPlots("tcp", rate, cs)
	if err != nil {
		t.Fatal(err)
	}
	if load.X.Min != 0 || load.X.Max != 10 || latency.X.Min != 0 || latency.X.Max != 10 {
		t.Errorf("time axes: load %v..%v, latency %v..%v; want both 0..10", load.X.Min, load.X.Max, latency.X.Min, latency.X.Max)
	}
	if load.Y.Min != 0 {
		t.Errorf("the load axis starts at %v, want 0", load.Y.Min)
	}
	if latency.Y.Max < 80 {
		t.Errorf("the delay axis ends at %v: the 80 ms sample is not drawn", latency.Y.Max)
	}
}

// TestLogPlotsOfOneRecordRender: a cell of one record (a command stack's
// single event, 1 µs) has a CDF and a CCDF of one delay: both render
// (the plotting library panics when a log axis reaches 0, which its
// default padding of a one-value range does), the axis a decade around
// the value; a CCDF with no positive delay at all stays linear.
func TestLogPlotsOfOneRecordRender(t *testing.T) {
	one := map[string]plotter.XYs{"tcp": {{X: 0.001, Y: 1}}}
	for _, v := range []recordView{viewCDF, viewCCDF} {
		pl, _, _, err := recordPlot(v, []string{"tcp"}, one, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pl.WriterTo(4*vg.Inch, 3*vg.Inch, "svg"); err != nil {
			t.Fatalf("view %d: %v", v, err)
		}
		if _, isLog := pl.X.Scale.(plot.LogScale); v == viewCCDF && (!isLog || !(pl.X.Min > 0) || !(pl.X.Min < 0.001 && pl.X.Max > 0.001)) {
			t.Errorf("CCDF of one 0.001 ms delay: log %v, axis %v..%v; want a log axis around it", isLog, pl.X.Min, pl.X.Max)
		}
	}
	pl, _, _, err := recordPlot(viewCCDF, []string{"tcp"}, map[string]plotter.XYs{"tcp": {{X: 0, Y: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.WriterTo(4*vg.Inch, 3*vg.Inch, "svg"); err != nil {
		t.Fatal(err)
	}
}
