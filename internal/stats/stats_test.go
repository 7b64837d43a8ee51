package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tlab/internal/metrics"
	"tlab/internal/racedetect"
	"tlab/internal/results"
)

// TestMannWhitneyMatchesScipy checks the test's p-values against scipy
// 1.17.1 (the reference values were computed once and are kept here):
//
//	from scipy import stats
//	stats.mannwhitneyu(b, a, method=stats.PermutationMethod(n_resamples=np.inf))  # small, exact with ties
//	stats.mannwhitneyu(y, x, method='asymptotic', use_continuity=True)            # large
func TestMannWhitneyMatchesScipy(t *testing.T) {
	a := []float64{1.2, 1.5, 1.1, 1.9, 2.2, 1.4, 1.8, 1.3, 2.5, 1.6, 1.7, 2.0}
	b := []float64{1.9, 2.4, 2.1, 2.8, 2.2, 3.1, 2.6, 2.3, 2.9, 2.0, 2.7, 3.3}
	c := []float64{1, 2, 2, 3, 3, 3, 4, 4, 5, 6}
	d := []float64{2, 3, 4, 4, 5, 5, 6, 6, 7, 8}
	var x, y []float64
	for i := range 300 {
		x = append(x, float64((i*7919)%1000)/100)
		y = append(y, float64((i*104729)%1000)/100*1.1)
	}
	for _, tc := range []struct {
		a, b []float64
		u, p float64
	}{
		{a, b, 132.5, 0.00015457688091959193},
		{c, d, 76.5, 0.045995799865768905},
		{x, y, 48938, 0.06365185478252783},
	} {
		got := Compare(tc.a, tc.b, 1)
		if got.U != tc.u || !(math.Abs(got.P-tc.p) <= 1e-9*math.Max(1, tc.p)) {
			t.Errorf("n %d/%d: U %v p %.17g, scipy U %v p %.17g", len(tc.a), len(tc.b), got.U, got.P, tc.u, tc.p)
		}
	}
}

// TestEffectSizes: Cliff's delta and the Hodges-Lehmann shift on a case
// worked by hand, and the bootstrap interval around a clear shift.
func TestEffectSizes(t *testing.T) {
	// b − a over all pairs: {1,2,3, 0,1,2, -1,0,1}: 6 greater, 1 less;
	// their median (Hodges-Lehmann) is 1.
	c := Compare([]float64{1, 2, 3}, []float64{2, 3, 4}, 1)
	if !(math.Abs(c.CliffDelta-5.0/9) <= 1e-12) || c.HodgesLeh != 1 || c.Diff != 1 {
		t.Errorf("delta %v (want 5/9), HL %v (want 1), diff %v", c.CliffDelta, c.HodgesLeh, c.Diff)
	}
	var a, b []float64
	for i := range 200 {
		a = append(a, 10+float64(i%20)*0.1)
		b = append(b, 12+float64(i%20)*0.1)
	}
	c = Compare(a, b, 7)
	if !(c.DiffLow > 1.5 && c.DiffHigh < 2.5 && c.DiffLow <= c.Diff && c.Diff <= c.DiffHigh) || c.CliffDelta != 1 {
		t.Errorf("a 2 ms shift: diff %v (%v..%v), delta %v", c.Diff, c.DiffLow, c.DiffHigh, c.CliffDelta)
	}
	if again := Compare(a, b, 7); again.DiffLow != c.DiffLow {
		t.Error("the bootstrap is not reproducible with the same seed")
	}
}

// TestHolm on a hand-worked case: p = 0.01, 0.04, 0.03, 0.005 adjust to
// 0.03, 0.06, 0.06, 0.02 (sorted: 0.005×4, 0.01×3, 0.03×2, then 0.04×1
// raised to 0.06 to stay monotone).
func TestHolm(t *testing.T) {
	cs := []Comparison{{P: 0.01}, {P: 0.04}, {P: 0.03}, {P: 0.005}, {P: math.NaN()}}
	Holm(cs)
	for i, want := range []float64{0.03, 0.06, 0.06, 0.02} {
		if !(math.Abs(cs[i].PHolm-want) <= 1e-12) {
			t.Errorf("p %v: Holm %v, want %v", cs[i].P, cs[i].PHolm, want)
		}
	}
	if !math.IsNaN(cs[4].PHolm) {
		t.Error("a NaN p-value was adjusted")
	}
}

func TestJudge(t *testing.T) {
	cs := []Comparison{
		{A: "tcp", B: "quic", Diff: 0.2, DiffLow: 0.15, DiffHigh: 0.25, PHolm: 0.001},
		{A: "tcp", B: "h3", Diff: -0.1, DiffLow: -0.12, DiffHigh: -0.08, PHolm: 0.001},
		{A: "tcp", B: "h1s", Diff: 0.01, DiffLow: -0.02, DiffHigh: 0.04, PHolm: 0.3},
		{A: "tcp", B: "x", PHolm: math.NaN()},
	}
	// Each condition alone is not enough: a small corrected p with an
	// interval that straddles zero, and an interval that excludes zero
	// with a corrected p above α, are both no difference (dropping either
	// condition, or joining them with "or", fails here).
	cs = append(cs,
		Comparison{A: "tcp", B: "y", Diff: 0.2, DiffLow: -0.01, DiffHigh: 0.4, PHolm: 0.001},
		Comparison{A: "tcp", B: "z", Diff: 0.2, DiffLow: 0.1, DiffHigh: 0.3, PHolm: 0.2},
		Comparison{A: "tcp", B: "w", Diff: 0.2, DiffLow: 0.1, DiffHigh: 0.3, PHolm: Alpha})
	Judge(cs, "ms")
	for i, want := range []string{"tcp lower than quic by 0.2 ms", "h3 lower than tcp by 0.1 ms", "no significant difference", "too few samples",
		"no significant difference", "no significant difference", "no significant difference"} {
		if !strings.HasPrefix(cs[i].Verdict, want) {
			t.Errorf("verdict %q, want %q", cs[i].Verdict, want)
		}
	}
}

// TestForRunPicksTheSamplingUnit: with repeated cells the repetition is
// the sampling unit (each cell's median, and jitter and bytes too);
// without, the delay is compared request by request from records.csv.
func TestForRunPicksTheSamplingUnit(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for rep := 1; rep <= 6; rep++ {
		for i, p := range []string{"tcp", "h3"} {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p50_ms", Value: 11 + float64(i) + 0.01*float64(rep)},
					{Name: "jitter_pct", Value: 7.0 + 0.1*float64(rep%3)}, {Name: "bytes_per_request", Value: 330 + 150*float64(i) + float64(rep)}}})
		}
	}
	cs, err := ForRun(&results.Run{Dir: dir, Rows: rows}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].Unit != "repetition" || cs[0].NA != 6 {
		t.Fatalf("comparisons: %+v", cs)
	}
	if !strings.HasPrefix(cs[0].Verdict, "tcp lower than h3 by 1 ms") || !strings.HasPrefix(cs[2].Verdict, "tcp lower than h3 by 150 B") || cs[1].Verdict != "no significant difference" {
		t.Errorf("verdicts: %q / %q / %q", cs[0].Verdict, cs[1].Verdict, cs[2].Verdict)
	}

	// One repetition: the requests of each cell.
	dir = t.TempDir()
	rows = nil
	for i, p := range []string{"tcp", "quic"} {
		cell := results.Cell{ID: p, Profile: "lan", Protocol: p, Rep: 1}
		w, err := results.CreateRecords(filepath.Join(dir, "c-"+p+".csv"), cell, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 300 {
			w.Write(results.Record{Seq: k, DelayMs: 0.7 + 0.2*float64(i) + 0.001*float64(k%50), DoneMs: 1})
		}
		w.Close()
		rows = append(rows, results.Summary{Cell: p, Profile: "lan", Protocol: p, Rep: 1})
	}
	// records.csv as a run joins it: the first file's header, then rows.
	a, _ := os.ReadFile(filepath.Join(dir, "c-tcp.csv"))
	b, _ := os.ReadFile(filepath.Join(dir, "c-quic.csv"))
	os.WriteFile(filepath.Join(dir, results.RecordsFile), append(a, b[strings.IndexByte(string(b), '\n')+1:]...), 0o644)
	cs, err = ForRun(&results.Run{Dir: dir, Rows: rows}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Unit != "request" || cs[0].NA != 300 || !strings.HasPrefix(cs[0].Verdict, "tcp lower than quic by 0.2 ms") {
		t.Errorf("request-level comparison: %+v", cs)
	}
	if err := Write(dir, cs); err != nil {
		t.Fatal(err)
	}
	csvb, _ := os.ReadFile(filepath.Join(dir, "comparisons.csv"))
	if !strings.HasPrefix(string(csvb), strings.Join(Columns, ",")) {
		t.Errorf("comparisons.csv header: %s", csvb[:80])
	}
}

// TestMinP: the exact Mann-Whitney floor, against scipy's
// mannwhitneyu(method="exact") for fully separated samples (3 v 3: 0.1,
// 4 v 4: 0.02857, 5 v 5: 0.007937, 2 v 10: 0.03030).
func TestMinP(t *testing.T) {
	for _, c := range []struct {
		na, nb int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 0.028571}, {5, 5, 0.0079365}, {2, 10, 0.030303}, {1, 1, 1}} {
		if got := MinP(c.na, c.nb); !(math.Abs(got-c.want) <= 1e-5) {
			t.Errorf("MinP(%d, %d) = %.6f, want %.6f", c.na, c.nb, got, c.want)
		}
	}
}

// TestAgainstBaseline: each value of a swept field is compared with its
// baseline within one network, protocol and set of other swept values,
// oriented from the baseline (B − A: what the load adds).
func TestAgainstBaseline(t *testing.T) {
	var rows []results.Summary
	add := func(profile, proto, flows, queue string, p50s ...float64) {
		for i, v := range p50s {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s-%s-%s-%s-%d", profile, proto, flows, queue, i), Profile: profile, Protocol: proto, Rep: i + 1,
				Params: []results.Param{{Key: "link.queue", Value: queue}, {Key: "cross.flows", Value: flows}},
				Fields: []results.Field{{Name: "delay_p50_ms", Value: v}}})
		}
	}
	// Listed loaded first: the orientation must not depend on the order.
	add("5g", "tcp", "4", "droptail", 30, 30.5, 31, 30.2)
	add("5g", "tcp", "0", "droptail", 10, 10.1, 10.2, 10.3)
	add("5g", "tcp", "1", "droptail", 17, 17.1, 17.2, 17.3)
	add("5g", "tcp", "0", "fq_codel", 10, 10.1, 10.2, 10.3)
	add("5g", "tcp", "1", "fq_codel", 10.1, 10.2, 10.3, 10.4)
	cs, err := AgainstBaseline(&results.Run{Rows: rows}, "cross.flows", "0", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Comparison{}
	for _, c := range cs {
		if c.Metric != "delay_ms" {
			continue
		}
		if c.A != "0" || c.Profile != "5g / tcp" {
			t.Errorf("comparison %+v: want A the baseline 0, profile 5g / tcp", c)
		}
		got[c.Params+" "+c.B] = c
	}
	if len(got) != 3 {
		t.Fatalf("%d comparisons with the baseline, want 3: %v", len(got), got)
	}
	if c := got["droptail 4"]; !(math.Abs(c.Diff-20.2) <= 0.01) || c.DiffLow <= 0 {
		t.Errorf("droptail 4 flows: adds %v (%v to %v), want 20.2 (median 30.35 against 10.15)", c.Diff, c.DiffLow, c.DiffHigh)
	}
	if c := got["droptail 1"]; !(math.Abs(c.Diff-7) <= 0.01) {
		t.Errorf("droptail 1 flow: adds %v, want 7", c.Diff)
	}
	if c := got["fq_codel 1"]; !(math.Abs(c.Diff-0.1) <= 0.01) {
		t.Errorf("fq_codel 1 flow: adds %v, want 0.1", c.Diff)
	}
}

// TestAgainstBaselineReadsEachWorkloadsMedian: repeated pub/sub cells are
// compared by their message latency's median (the column pubsub gives
// its record delay), as periodic cells by delay_p50_ms.
func TestAgainstBaselineReadsEachWorkloadsMedian(t *testing.T) {
	var rows []results.Summary
	for _, flows := range []string{"0", "1"} {
		for i := range 3 {
			v := 25.5 + 0.1*float64(i)
			if flows == "1" {
				v += 13
			}
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("m%s%d", flows, i), Profile: "wifi", Protocol: "mqtt-tls", Rep: i + 1,
				Params: []results.Param{{Key: "cross.flows", Value: flows}}, Fields: []results.Field{{Name: "message_latency_p50_ms", Value: v}}})
		}
	}
	cs, err := AgainstBaseline(&results.Run{Rows: rows}, "cross.flows", "0", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Metric == "delay_ms" && c.Unit == "repetition" && math.Abs(c.Diff-13) < 1e-9 {
			return
		}
	}
	t.Errorf("no repetition-level delay comparison adding 13 ms: %+v", cs)
}

// TestLostRequestsCountAgainstAStack: two stacks answer the same 300
// requests, but "lossy" loses its 30 slowest (they time out) while
// "slow" answers them late. Counted over completed requests only, lossy
// would look faster; a request that never came back is later than any
// that did, so slow must not lose, and lossy's lost requests must show
// in the samples' sizes.
func TestLostRequestsCountAgainstAStack(t *testing.T) {
	dir := t.TempDir()
	var cells []results.Cell
	for _, p := range []string{"slow", "lossy"} {
		cells = append(cells, results.Cell{ID: p, Profile: "lan", Protocol: p, Rep: 1})
	}
	rows := writeRecords(t, dir, cells, func(c results.Cell) []results.Record {
		var out []results.Record
		for k := range 300 {
			d := 1 + 0.01*float64(k%100)
			if k%10 == 0 {
				d = 50 // the slow tenth
			}
			r := results.Record{Seq: k, DelayMs: d, DoneMs: float64(k) + d}
			if c.Protocol == "lossy" && k%10 == 0 {
				r.DelayMs, r.DoneMs, r.Error = math.NaN(), math.NaN(), "timeout"
			}
			out = append(out, r)
		}
		return out
	})
	cs, err := ForRun(&results.Run{Dir: dir, Rows: rows}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("comparisons: %+v", cs)
	}
	c := cs[0]
	if c.NA != 300 || c.NB != 300 {
		t.Errorf("samples of %d and %d requests: the lost ones must count (300 each)", c.NA, c.NB)
	}
	if strings.HasPrefix(c.Verdict, "lossy lower") {
		t.Errorf("the stack that lost its slowest requests was called faster: %s", c.Verdict)
	}
	if !(c.CliffDelta > 0) {
		t.Errorf("Cliff's delta %v: lossy's lost requests are later than slow's late ones, so B (lossy) > A", c.CliffDelta)
	}
	for _, v := range []float64{c.Diff, c.DiffLow, c.DiffHigh, c.HodgesLeh} {
		if math.IsNaN(v) {
			t.Errorf("a difference is NaN: %+v", c)
		}
	}
}

// TestComparisonsWithInfiniteMediansAreWritten: a stack whose median
// request never came back has an infinite median; comparisons.json and
// .csv carry it as inf rather than failing to encode.
func TestComparisonsWithInfiniteMediansAreWritten(t *testing.T) {
	dir := t.TempDir()
	inf := math.Inf(1)
	c := Compare([]float64{1, 2, 3}, []float64{inf, inf, 2}, 1)
	if !math.IsInf(c.MedianB, 1) || !math.IsInf(c.Diff, 1) {
		t.Fatalf("median B %v, diff %v; want +Inf", c.MedianB, c.Diff)
	}
	if err := Write(dir, []Comparison{c}); err != nil {
		t.Fatalf("writing a comparison with an infinite median: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "comparisons.json"))
	// Infinity as a number (the largest double), not as text: see
	// results.JSONNumber.
	if !strings.Contains(string(b), `"median_b": 1.7976931348623157e+308`) {
		t.Errorf("comparisons.json: %s", b)
	}
}

// TestTheBaselineIsComparedAgainst: with a baseline named in the
// manifest (study D's mqtt-tls), every other protocol is compared as B
// against it, whatever the order the scenario lists them in, so that
// mean_ratio is T / T(baseline): study D's ξ (here on a metric the stats
// package registers).
func TestTheBaselineIsComparedAgainst(t *testing.T) {
	var rows []results.Summary
	for rep := 1; rep <= 4; rep++ {
		for i, p := range []string{"mqtt-tcp", "mqtt-tls", "mqtt-quic"} {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "wifi", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "bytes_per_request", Value: 300 + 10*float64(i) + float64(rep)}}})
		}
	}
	cs, err := ForRun(&results.Run{Dir: t.TempDir(), Rows: rows, Manifest: &results.Manifest{Baseline: "mqtt-tls"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, c := range cs {
		if c.Metric == "bytes_per_request" {
			pairs = append(pairs, c.A+">"+c.B)
			if c.A == "mqtt-tls" && c.B == "mqtt-quic" && !(math.Abs(c.Ratio-(322.5/312.5)) <= 1e-9) {
				t.Errorf("ξ QUIC/TLS = %v, want 322.5/312.5", c.Ratio)
			}
		}
	}
	if strings.Join(pairs, " ") != "mqtt-tls>mqtt-tcp mqtt-tls>mqtt-quic mqtt-tcp>mqtt-quic" {
		t.Errorf("pairs %v: want the baseline first in each of its pairs", pairs)
	}
}

// TestQuantileDifferenceCoversAsStated: the bootstrap interval of a
// difference in 95th percentiles, between two samples of 100 drawn from
// the same exponential law shifted by 3 (true difference 3), covers it
// at least 95 % of the time, and a shift of zero is called "no
// significant difference" about as often.
//
// The band, by the binomial law of the number of intervals that cover in
// 600 trials: a 95 % interval covers Binomial(600, 0.95) times (mean 570),
// which is under 557 with probability 0.81 %; a 90 % one covers
// Binomial(600, 0.90) times (mean 540), which reaches 557 with
// probability 0.99 % (exact sums of the binomial terms). So at least
// 557 of 600 (92.8 %) tells them apart, each way wrong under 1 % of the
// time. One-sided: a percentile bootstrap of a tail's quantile is
// conservative (97 % measured over 1000 trials), which is no harm.
// Under the race detector, which makes each trial ten times slower, the
// trials only look for races.
func TestQuantileDifferenceCoversAsStated(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	draw := func(shift float64) []float64 {
		v := make([]float64, 100)
		for i := range v {
			v[i] = r.ExpFloat64()*5 + shift
		}
		return v
	}
	trials, calmTrials := 600, 100
	if racedetect.Enabled {
		trials, calmTrials = 20, 20
	}
	covered, calm := 0, 0
	for i := range trials {
		c := CompareQuantile(draw(0), draw(3), 0.95, uint64(i))
		if c.DiffLow <= 3 && 3 <= c.DiffHigh {
			covered++
		}
	}
	for i := range calmTrials {
		n := []Comparison{CompareQuantile(draw(0), draw(0), 0.95, uint64(i))}
		Holm(n)
		Judge(n, "ms")
		if n[0].Verdict == "no significant difference" {
			calm++
		}
	}
	if !racedetect.Enabled && covered < 557 {
		t.Errorf("the 95 %% interval of a p95 difference covered the truth %d times in %d, want at least 557", covered, trials)
	}
	if f := float64(calm) / float64(calmTrials); !racedetect.Enabled && f < 0.89 {
		t.Errorf("equal laws called different %.1f %% of the time", 100*(1-f))
	}
	c := CompareQuantile([]float64{1, 2, 3, math.Inf(1)}, []float64{1, 2, 3, 4}, 0.99, 1)
	if c.Quantile != 0.99 || !math.IsInf(c.MedianA, 1) {
		t.Errorf("a failed request (inf) must stay the p99 of its side: %+v", c)
	}
}

// TestResampledQuantileIsTheQuantileOfTheResample: the counting shortcut
// gives what sorting the resample gives, on ties and infinities too.
func TestResampledQuantileIsTheQuantileOfTheResample(t *testing.T) {
	sorted := []float64{1, 2, 2, 3, 5, 8, 13, math.Inf(1)}
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		for seed := range uint64(50) {
			r1, r2 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
			got := resampledQuantile(sorted, make([]int32, len(sorted)), q, r1)
			counts := make([]int, len(sorted))
			for range sorted {
				counts[r2.IntN(len(sorted))]++
			}
			var resample []float64
			for i, c := range counts {
				for range c {
					resample = append(resample, sorted[i])
				}
			}
			if want := metrics.QuantileOf(resample, q); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("q %.2f seed %d: %v, sorting the resample %v (%v)", q, seed, got, want, resample)
			}
		}
	}
}

// TestAgainstRecordingComparesTheTail: a recording whose median agrees
// with its path but whose slow tail is ten times as thick (5 % of
// requests at 50 ms against 0.5 %) is told apart by the 99th percentile's
// row, while the median's finds no difference.
func TestAgainstRecordingComparesTheTail(t *testing.T) {
	dir := t.TempDir()
	var cells []results.Cell
	for _, net := range []string{"remote", "mypath"} {
		cells = append(cells, results.Cell{ID: net, Profile: net, Protocol: "tcp", Rep: 1})
	}
	rows := writeRecords(t, dir, cells, func(c results.Cell) []results.Record {
		slow := map[string]int{"remote": 200, "mypath": 20}[c.Profile]
		var out []results.Record
		for k := range 1000 {
			d := 20 + 0.002*float64(k%500)
			if k%slow == 0 {
				d = 50
			}
			out = append(out, results.Record{Seq: k, DelayMs: d, DoneMs: float64(k) + d})
		}
		return out
	})
	cs, err := AgainstRecording(&results.Run{Dir: dir, Rows: rows}, "remote", "mypath", 1)
	if err != nil {
		t.Fatal(err)
	}
	var median, tail *Comparison
	for i := range cs {
		switch cs[i].Quantile {
		case 0.5:
			median = &cs[i]
		case 0.99:
			tail = &cs[i]
		}
	}
	if median == nil || tail == nil {
		t.Fatalf("comparisons %+v: want a median's and a p99's", cs)
	}
	if median.Verdict != "no significant difference" {
		t.Errorf("medians 20.5 and 20.5 ms: %s", median.Verdict)
	}
	if !strings.HasPrefix(tail.Verdict, "remote lower") || tail.MedianB != 50 {
		t.Errorf("p99 %.1f on the path against %.1f on the recording: %s (%+v)", tail.MedianA, tail.MedianB, tail.Verdict, *tail)
	}
}

// writeRecords writes each cell's records into its cell directory of dir,
// as a run does, and joins them into records.csv with the run's own join;
// it returns the cells' summary rows.
func writeRecords(t *testing.T, dir string, cells []results.Cell, records func(results.Cell) []results.Record) []results.Summary {
	t.Helper()
	var rows []results.Summary
	for _, c := range cells {
		cdir := results.CellDir(dir, c.ID)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := results.CreateRecords(filepath.Join(cdir, results.RecordsFile), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records(c) {
			w.Write(r)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := results.MarkDone(cdir); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, results.Summary{Cell: c.ID, Profile: c.Profile, Protocol: c.Protocol, Rep: c.Rep})
	}
	if err := results.JoinRecords(dir); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAnInfiniteTailInAIsAVerdict: 1000 delays of 20–21 ms of which 2 %
// failed (a failed request is +Inf: later than any delay) against the same
// 1000 without failures. A's p99 is the order statistic at (n−1)·0.99 =
// 989.01 from 0, which lies among its 20 infinite values (ranks 980–999),
// so A's p99 is +Inf and B's is finite: B − A is −Inf, and the bootstrap
// draws almost always agree (a resample of A keeps fewer than 10 of its
// failures — the count is Binomial(1000, 0.02), mean 20, sd 4.4 — with
// probability under 1 %), so the interval lies below zero, the p-value is
// under α and the verdict is B lower. The mirror case (B's tail infinite)
// must give the same verdict the other way round.
func TestAnInfiniteTailInAIsAVerdict(t *testing.T) {
	finite := make([]float64, 1000)
	for i := range finite {
		finite[i] = 20 + float64(i)/999 // 20 to 21 ms
	}
	failing := slices.Clone(finite)
	for i := 0; i < len(failing); i += 50 { // 20 of 1000: 2 %
		failing[i] = math.Inf(1)
	}
	for _, tc := range []struct {
		name       string
		a, b       []float64
		winner     string
		wantDiffIn int // the sign of the difference's infinity
	}{
		{"A's tail infinite", failing, finite, "B lower than A", -1},
		{"B's tail infinite", finite, failing, "A lower than B", +1},
	} {
		c := CompareQuantile(tc.a, tc.b, 0.99, 7)
		c.A, c.B = "A", "B"
		if !math.IsInf(c.Diff, tc.wantDiffIn) {
			t.Errorf("%s: p99 difference %v, want %v", tc.name, c.Diff, math.Inf(tc.wantDiffIn))
		}
		if math.IsNaN(c.DiffLow) || math.IsNaN(c.DiffHigh) {
			t.Errorf("%s: interval %v..%v, want one on the side of %v", tc.name, c.DiffLow, c.DiffHigh, math.Inf(tc.wantDiffIn))
		}
		if tc.wantDiffIn < 0 && !(c.DiffHigh < 0) || tc.wantDiffIn > 0 && !(c.DiffLow > 0) {
			t.Errorf("%s: interval %v..%v includes zero", tc.name, c.DiffLow, c.DiffHigh)
		}
		if !(c.P < Alpha) {
			t.Errorf("%s: p = %v, want under %v", tc.name, c.P, Alpha)
		}
		cs := []Comparison{c}
		Holm(cs)
		Judge(cs, "ms")
		if !strings.HasPrefix(cs[0].Verdict, tc.winner) {
			t.Errorf("%s: verdict %q, want %q…", tc.name, cs[0].Verdict, tc.winner)
		}
	}
}

// TestMeanIntervalMatchesTheTTable: {1, 2, 3} has mean 2 and standard
// deviation 1, so its 95 % interval is 2 ± t(0.975, 2)·1/√3, with
// t(0.975, 2) = 4.3027 from the t table: 2 ± 2.4842.
func TestMeanIntervalMatchesTheTTable(t *testing.T) {
	lo, hi := MeanInterval([]float64{1, 2, 3}, 0.95)
	half := 4.3027 / math.Sqrt(3)
	if !(math.Abs(lo-(2-half)) > 1e-4 || math.Abs(hi-(2+half)) <= 1e-4) {
		t.Errorf("MeanInterval({1,2,3}, 95 %%) = %v..%v, want %v..%v", lo, hi, 2-half, 2+half)
	}
	// 90 %: t(0.95, 2) = 2.9200.
	lo, hi = MeanInterval([]float64{1, 2, 3}, 0.90)
	if half := 2.9200 / math.Sqrt(3); !(math.Abs(lo-(2-half)) > 1e-4 || math.Abs(hi-(2+half)) <= 1e-4) {
		t.Errorf("MeanInterval({1,2,3}, 90 %%) = %v..%v, want 2 ± %v", lo, hi, half)
	}
}

// TestQuantilePValueByHand: CompareQuantile's p-value is twice the
// smaller share of resampled differences on either side of zero, a tie
// counting half on each side. Worked by hand for the maximum (q = 1) of
// two values, where a resample of {x, y} keeps only x with probability
// 1/4:
//   - A = {0, 2}, B = {1, 1}: B − A is −1 unless A's resample is {0, 0}
//     (then +1): shares 3/4 and 1/4, p = 2·1/4 = 0.5;
//   - A = {0, 1}, B = {1, 1}: B − A is 0 (a tie) with probability 3/4,
//     +1 with 1/4: below 3/8, above 5/8, p = 0.75;
//   - equal constant samples: every difference a tie, p = 1;
//   - B wholly above A: every difference positive, p = 0.
//
// With 2000 resamples a share's standard error is at most
// √(0.25·0.75/2000) = 0.0097, p's twice that: 0.5 and 0.75 within 0.08
// (four of them).
func TestQuantilePValueByHand(t *testing.T) {
	for _, c := range []struct {
		a, b   []float64
		p, tol float64
	}{
		{[]float64{0, 2}, []float64{1, 1}, 0.5, 0.08},
		{[]float64{0, 1}, []float64{1, 1}, 0.75, 0.08},
		{[]float64{5, 5, 5}, []float64{5, 5, 5}, 1, 0},
		{[]float64{0, 1, 2}, []float64{10, 11, 12}, 0, 0},
	} {
		got := CompareQuantile(c.a, c.b, 1, 3)
		if !(math.Abs(got.P-c.p) <= c.tol) {
			t.Errorf("A %v, B %v: p = %v, want %v ± %v", c.a, c.b, got.P, c.p, c.tol)
		}
	}
}

// TestBothTailsInfiniteAreEqual: when both stacks lose 10 % of 100
// requests, each p99 is a request that never came back (type 7: h =
// 99·0.99 = 98.01, between the 99th and 100th values, both +Inf). For the
// application both waited for ever: the difference is 0, not Inf − Inf's
// NaN, and no difference can be called. A resample's p99 is finite only
// when it draws fewer than 2 of the 10 failures (Binomial(100, 0.1):
// P(X < 2) = 0.9^100 + 100·0.1·0.9^99 = 0.0003 + 0.0030), so nearly
// every resampled difference is a tie: p near 1, far above α.
func TestBothTailsInfiniteAreEqual(t *testing.T) {
	a, b := make([]float64, 100), make([]float64, 100)
	for i := range a {
		a[i], b[i] = 20+float64(i)/100, 30+float64(i)/100
		if i%10 == 0 {
			a[i], b[i] = math.Inf(1), math.Inf(1)
		}
	}
	c := CompareQuantile(a, b, 0.99, 11)
	if c.Diff != 0 {
		t.Errorf("p99 difference %v, want 0 (both +Inf)", c.Diff)
	}
	if !(c.DiffLow <= 0 && c.DiffHigh >= 0) {
		t.Errorf("interval %v..%v, want one holding 0", c.DiffLow, c.DiffHigh)
	}
	if !(c.P > 0.9) {
		t.Errorf("p = %v, want near 1", c.P)
	}
	cs := []Comparison{c}
	Holm(cs)
	Judge(cs, "ms")
	if cs[0].Verdict != "no significant difference" {
		t.Errorf("verdict %q, want no significant difference", cs[0].Verdict)
	}
}

// TestMeanIntervalOfAnInfiniteValue: a repetition whose value is +Inf (a
// percentile among requests that never came back) makes the mean +Inf,
// and so both ends of its interval (MeanInterval's contract), not the NaN
// that (x − m)² with m = +Inf gives; likewise −Inf. Fewer than two values
// have no interval.
func TestMeanIntervalOfAnInfiniteValue(t *testing.T) {
	if lo, hi := MeanInterval([]float64{1, 2, math.Inf(1)}, 0.95); !math.IsInf(lo, 1) || !math.IsInf(hi, 1) {
		t.Errorf("MeanInterval({1, 2, +Inf}) = %v..%v, want +Inf..+Inf", lo, hi)
	}
	if lo, hi := MeanInterval([]float64{math.Inf(-1), 2, 3}, 0.95); !math.IsInf(lo, -1) || !math.IsInf(hi, -1) {
		t.Errorf("MeanInterval({-Inf, 2, 3}) = %v..%v, want -Inf..-Inf", lo, hi)
	}
	if lo, hi := MeanInterval([]float64{4}, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("MeanInterval({4}) = %v..%v, want NaN", lo, hi)
	}
}
