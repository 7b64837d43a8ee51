package analysis

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestTukeyBoxByHand: quartiles by Hyndman and Fan's type 7 (R's and
// numpy's default: the q-quantile of n sorted values x(0..n-1) is
// x(⌊h⌋) + (h−⌊h⌋)(x(⌊h⌋+1) − x(⌊h⌋)) with h = (n−1)q), whiskers at the
// furthest values within 1.5 IQR of the box (Tukey). By hand:
//
//   - 1..9 and 16 (n = 10): Q1 at h = 2.25: 3 + 0.25 = 3.25; the median
//     at h = 4.5: 5.5; Q3 at h = 6.75: 7 + 0.75 = 7.75. IQR 4.5, fences
//     3.25 − 6.75 = −3.5 and 7.75 + 6.75 = 14.5: the low whisker is 1 (the
//     smallest), the high 9 (16 is beyond). Type 6 would put Q1 at
//     position (n+1)/4 = 2.75, that is 2.75, and 3 IQR would reach 16.
//   - −20, 10, 11, 12, 13 (n = 5): Q1 = x(1) = 10, median 11, Q3 = x(3) =
//     12; fences 10 − 3 = 7 and 12 + 3 = 15: the low whisker is 10 (−20 is
//     beyond), the high 13.
func TestTukeyBoxByHand(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Box
	}{
		{[]float64{16, 9, 1, 8, 2, 7, 3, 6, 4, 5}, Box{N: 10, WhiskerLow: 1, Q1: 3.25, Median: 5.5, Q3: 7.75, WhiskerHigh: 9}},
		{[]float64{13, 12, 11, 10, -20}, Box{N: 5, WhiskerLow: 10, Q1: 10, Median: 11, Q3: 12, WhiskerHigh: 13}},
	} {
		in := append([]float64(nil), c.in...)
		if got := Tukey(c.in); got != c.want {
			t.Errorf("Tukey(%v) = %+v, want %+v", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Tukey reordered its argument: %v, was %v", c.in, in)
			}
		}
	}
}

// TestXiPerRepetitionDividesByTheBaselineMean: the study's ξ box is one
// ratio per repetition of the protocol, each over the baseline's *average*
// Δ ("as we divide by the average completion time of TCP, the variability
// of the corresponding results reflects that seen with the QUIC protocol",
// ../shared/docs/studies.md, study D), so the spread is the protocol's
// alone. By hand: the baseline's Δs 100, 200 and 300 ms average 200 ms;
// the protocol's 50, 400 and 10 ms give 0.25, 2 and 0.05 (in repetition
// order 1, 2, 4), where dividing by the same repetition would give 0.5 and
// 2 and drop repetition 4. A NaN Δ (a failed repetition) is left out on
// either side: the baseline's 100 and 300 with a NaN average 200 still.
func TestXiPerRepetitionDividesByTheBaselineMean(t *testing.T) {
	want := []float64{0.25, 2, 0.05}
	for _, base := range []map[int]float64{
		{1: 100, 2: 200, 3: 300},
		{1: 100, 2: math.NaN(), 3: 300, 5: 200},
	} {
		got := RepetitionRatios(base, map[int]float64{1: 50, 2: 400, 4: 10, 6: math.NaN()})
		if len(got) != len(want) {
			t.Errorf("base %v: ratios %v, want %v", base, got, want)
			continue
		}
		for i := range want {
			if !(math.Abs(got[i]-want[i]) <= 1e-12) {
				t.Errorf("base %v: ratios %v, want %v", base, got, want)
				break
			}
		}
	}
	if got := RepetitionRatios(map[int]float64{1: math.NaN()}, map[int]float64{1: 50}); len(got) != 0 {
		t.Errorf("no baseline Δ: ratios %v, want none", got)
	}
}

// TestPubsubBoxesStepGroupsAndWrites: the step boxes each stack's
// repetitions on each network and set of swept values apart (rows
// without the figure left out), ξ per repetition for both orders of a
// pair, and writes them as pubsub-boxes.csv. By hand, on wifi at loss 1%:
// tcp's Δs 10, 20, 30 (type 7: Q1 15, median 20, Q3 25, whiskers 10 and
// 30, nothing beyond 25 ± 15); quic's 20, 40 and a failed repetition
// (NaN: left out), Q1 25, median 30, Q3 35. ξ of quic over tcp's mean 20:
// 1 and 2 (Q1 1.25, median 1.5, Q3 1.75); of tcp over quic's mean 30:
// 1/3, 2/3 and 1. On wifi at loss 5% tcp alone: 100, no ratio.
func TestPubsubBoxesStepGroupsAndWrites(t *testing.T) {
	row := func(net, loss, proto string, rep int, c float64) results.Summary {
		return results.Summary{Cell: net + loss + proto, Profile: net, Protocol: proto, Rep: rep,
			Params: []results.Param{{Key: "profile.loss", Value: loss}},
			Fields: []results.Field{{Name: XiMetric, Value: c}}}
	}
	rows := []results.Summary{
		row("wifi", "1%", "tcp", 1, 10), row("wifi", "1%", "quic", 1, 20),
		row("wifi", "1%", "tcp", 2, 30), row("wifi", "1%", "quic", 2, math.NaN()),
		row("wifi", "1%", "tcp", 3, 20), row("wifi", "1%", "quic", 3, 40),
		row("wifi", "5%", "tcp", 1, 100),
	}
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, PubsubBoxesStep)
	if err != nil {
		t.Fatal(err)
	}
	third := 1.0 / 3
	for _, c := range []struct {
		network, params, metric, ref, proto string
		want                                Box
	}{
		{"wifi", "1%", XiMetric, "", "tcp", Box{N: 3, WhiskerLow: 10, Q1: 15, Median: 20, Q3: 25, WhiskerHigh: 30}},
		{"wifi", "1%", XiMetric, "", "quic", Box{N: 2, WhiskerLow: 20, Q1: 25, Median: 30, Q3: 35, WhiskerHigh: 40}},
		{"wifi", "5%", XiMetric, "", "tcp", Box{N: 1, WhiskerLow: 100, Q1: 100, Median: 100, Q3: 100, WhiskerHigh: 100}},
		{"wifi", "1%", XiPerRepetition, "tcp", "quic", Box{N: 2, WhiskerLow: 1, Q1: 1.25, Median: 1.5, Q3: 1.75, WhiskerHigh: 2}},
		{"wifi", "1%", XiPerRepetition, "quic", "tcp", Box{N: 3, WhiskerLow: third, Q1: 0.5, Median: 2 * third, Q3: 5.0 / 6, WhiskerHigh: 1}},
	} {
		got, ok := a.BoxOf(c.network, c.params, c.metric, c.ref, c.proto)
		c.want.Network, c.want.Params, c.want.Metric, c.want.Reference, c.want.Protocol = c.network, c.params, c.metric, c.ref, c.proto
		if !ok {
			t.Errorf("no box of %s for %s over %q on %s %s", c.metric, c.proto, c.ref, c.network, c.params)
			continue
		}
		for _, d := range [][2]float64{{got.WhiskerLow, c.want.WhiskerLow}, {got.Q1, c.want.Q1}, {got.Median, c.want.Median}, {got.Q3, c.want.Q3}, {got.WhiskerHigh, c.want.WhiskerHigh}} {
			if !(math.Abs(d[0]-d[1]) <= 1e-12) {
				t.Errorf("box of %s for %s over %q on %s %s = %+v, want %+v", c.metric, c.proto, c.ref, c.network, c.params, got, c.want)
				break
			}
		}
		if got.N != c.want.N {
			t.Errorf("box of %s for %s over %q: n %d, want %d", c.metric, c.proto, c.ref, got.N, c.want.N)
		}
	}
	for _, missing := range [][2]string{{"tcp", "5%"}, {"quic", "5%"}} {
		if b, ok := a.BoxOf("wifi", missing[1], XiPerRepetition, missing[0], "quic"); ok {
			t.Errorf("a ratio box where only tcp ran: %+v", b)
		}
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	if len(a.Files) != 1 || a.Files[0] != PubsubBoxesFile {
		t.Errorf("files written %v, want [%s]", a.Files, PubsubBoxesFile)
	}
	b, err := os.ReadFile(filepath.Join(dir, PubsubBoxesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "network,params,metric,reference,protocol,n,whisker_low,q1,median,q3,whisker_high" {
		t.Errorf("header %q", lines[0])
	}
	if want := "wifi,1%,xi_per_repetition,tcp,quic,2,1,1.25,1.5,1.75,2"; !strings.Contains(string(b), want+"\n") {
		t.Errorf("%s lacks %q:\n%s", PubsubBoxesFile, want, b)
	}
	// 3 columns' boxes (tcp and quic at 1%, tcp at 5%) and 2 ratios.
	if len(lines) != 1+5 {
		t.Errorf("%d boxes written, want 5:\n%s", len(lines)-1, b)
	}
}

// TestPubsubBoxesStepWritesNothingWithoutPubsub: a run without Δ or Δ+
// (request-response rows) has no boxes and no file.
func TestPubsubBoxesStepWritesNothingWithoutPubsub(t *testing.T) {
	dir := t.TempDir()
	rows := []results.Summary{{Cell: "c", Profile: "wifi", Protocol: "tcp", Rep: 1, Fields: []results.Field{{Name: "delay_p99_ms", Value: 3}}}}
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, PubsubBoxesStep)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PubsubBoxesFile)); err == nil || len(a.Files) != 0 {
		t.Errorf("a run without pubsub figures got %s (files %v)", PubsubBoxesFile, a.Files)
	}
}
