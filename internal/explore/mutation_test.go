package explore

import (
	"context"
	"math"
	"testing"

	"tlab/internal/advise"
)

// Tests written for issue 49's mutation audit: each pins a number the
// map's reader sees (an e-value, a verdict, its p-value and effect, an
// inferred status, the repetitions before a point parks) to a value
// worked by hand in its comment, at an input the other tests leave out.

// Ties carry no sign (signLogE's definition: "ties and NaN carry no
// sign"; a tie is two names for one stack measuring the same value). By
// hand, d = 3, 0, 5, 0, NaN: two positive signs and no negative one, n =
// 2: 2^2 · 2! 0! / 3! = 8/6 = 4/3. Counting the ties as negative would
// give n = 4, 2^4 · 2! 2! / 5! = 64/120 = 0.533.
func TestTiesCarryNoSign(t *testing.T) {
	d := []float64{3, 0, 5, 0, math.NaN()}
	if got, want := math.Exp(SignMixture.LogE(d)), 4.0/3; !(math.Abs(got-want) <= 1e-12) {
		t.Errorf("sign e-value of 3, 0, 5, 0, NaN = %v, want 4/3 = %v", got, want)
	}
}

// The bounded bet skips a NaN value and clips a value outside the
// metric's range to the range (bettingLogE's comment: "NaN values carry
// no bet"; "Values outside [lo, hi] are clipped to them"). By hand, on
// [0, 100] against a bound of 1 (m = 0.01):
//   - 100, NaN, 100 is TestTheBoundedBetByHand's 100, 100: 1609.41;
//   - 150 twice is clipped to 100 twice: 1609.41 again;
//   - −5 twice is clipped to 0 (y = 0): the bets on "above" multiply by
//     1 + (k/11)/0.01·(0 − 0.01) = 1 − k/11, squared and summed over k =
//     1..10: Σ (j/11)² = 385/121 = 3.181818; the bets on "below" by 1 −
//     (k/11)/0.99·(0 − 0.01) = 1 + k/1089, squared and summed: 10 +
//     2·55/1089 + 385/1089² = 10.101335; the mean of the 20 capitals
//     (3.181818 + 10.101335)/20 = 0.664158.
func TestTheBoundedBetSkipsNaNAndClipsToTheRange(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		want   float64
	}{
		{"100, NaN, 100", []float64{100, math.NaN(), 100}, 1609.409},
		{"150, 150", []float64{150, 150}, 1609.409},
		{"-5, -5", []float64{-5, -5}, 0.664158},
	} {
		var d []float64
		for _, v := range c.values {
			d = append(d, v-1)
		}
		if got := math.Exp(bettingLogE(d, 0, 100, 1)); !(math.Abs(got-c.want) <= 1e-3) { // NaN fails too
			t.Errorf("bounded bet on %s against 1 %% = %v, want %v", c.name, got, c.want)
		}
	}
}

// The floor bet skips a NaN value and counts a value below the floor as
// the floor (floorBetLogE's comment). By hand, against a bound of 100
// with floor 0:
//   - 300, NaN, 300 is TestTheFloorBetByHand's 300, 300: 4.272727;
//   - −50 twice counts as 0 twice: each bet multiplies by 1 +
//     (k/11)/100·(0 − 100) = 1 − k/11, squared and summed over k = 1..10:
//     385/121 = 3.181818, the mean of the 10 capitals 0.318182 (taken as
//     −50 the largest bets would multiply by 1 − 1.5·k/11 < 0 for k ≥ 8:
//     no capital).
func TestTheFloorBetSkipsNaNAndCountsTheFloor(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		want   float64
	}{
		{"300, NaN, 300", []float64{300, math.NaN(), 300}, 4.272727},
		{"-50, -50", []float64{-50, -50}, 0.318182},
	} {
		var d []float64
		for _, v := range c.values {
			d = append(d, v-100)
		}
		if got := math.Exp(floorBetLogE(d, 0, 100)); !(math.Abs(got-c.want) <= 1e-5) { // NaN fails too
			t.Errorf("floor bet on %s against 100 = %v, want %v", c.name, got, c.want)
		}
	}
}

// A verdict reached at one look stands after later looks weaken the
// evidence, in the direction it had when reached, and its p-value is the
// largest e-value's reciprocal times the tests (Evidence's and Judge's
// comments: "the largest e-value seen at any look", "the sign of the
// mean difference when it was reached", P = min(1, tests/sup E)). By
// hand, a pair a vs b on a latency (lower is better), sign rule, at
// alpha 0.1 shared between 2 tests (decided at E >= 2/0.1 = 20): a − b
// is +1 in repetitions 1..8 and −10 in the 9th. After 8: eight positive
// signs, E = 2^8 · 8!/9! = 256/9 = 28.44 >= 20, mean +1 (b lower); after
// 9: eight and one, E = 2^9 · 8! 1!/10! = 512/90 = 5.69, mean (8 −
// 10)/9 < 0. The verdict: b (decided at the 8th, with a positive mean),
// p = 2 · 9/256 = 0.0703125, effect −2/9, 9 repetitions.
func TestAVerdictStandsWithTheSignItWasReachedWith(t *testing.T) {
	c := Comparison{Kind: PairKind, A: "a", B: "b", Requirement: advise.Requirement{Metric: "delay_p99_ms", Op: "<=", Bound: 50}}
	var reps []map[string]map[string]float64
	for i := range 9 {
		a := 11.0
		if i == 8 {
			a = 0
		}
		reps = append(reps, map[string]map[string]float64{"a": {"delay_p99_ms": a}, "b": {"delay_p99_ms": 10}})
	}
	v := c.Judge(reps, SignMixture, 0.1, 2)
	if v.Label != "b" {
		t.Errorf("verdict %q, want b (decided at the 8th repetition with b lower)", v.Label)
	}
	if !(math.Abs(v.P-0.0703125) <= 1e-12) {
		t.Errorf("p = %v, want 2 · 9/256 = 0.0703125", v.P)
	}
	if !(math.Abs(v.Effect-(-2.0/9)) <= 1e-12) || v.N != 9 {
		t.Errorf("effect %v over %d repetitions, want -2/9 over 9", v.Effect, v.N)
	}
}

// A value beyond any bound (+Inf: a percentile among messages that never
// completed) stands as ten times the largest finite value at the point or
// the bound, whichever is larger (differences' comment). By hand, a
// stack's latency +Inf and 50 against <= 100: the largest is the bound,
// 100, so +Inf stands as 1000; the differences are 900 and −50, the
// verdict's effect (their mean) 425.
func TestAnInfiniteValueStandsAsTenTimesTheBound(t *testing.T) {
	c := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "delay_p99_ms", Op: "<=", Bound: 100}}
	reps := []map[string]map[string]float64{{"x": {"delay_p99_ms": math.Inf(1)}}, {"x": {"delay_p99_ms": 50}}}
	if got := c.Judge(reps, TMixture, 0.05, 1).Effect; got != 425 {
		t.Errorf("effect of +Inf and 50 against 100 = %v, want (900 − 50)/2 = 425", got)
	}
}

// searchWith is a search over params with the given monotone directions,
// two stacks and one latency requirement.
func searchWith(params []Param, dirs []int, coarse int) *search {
	cfg := Config{Params: params, Stacks: []string{"quic", "tcp"}, Require: require(50), Coarse: coarse, Monotone: dirs}
	cfg.Defaults()
	s := &search{cfg: cfg, comps: comparisons(cfg.Stacks, cfg.Require), points: map[[2]int]*PointResult{}}
	for i, p := range params {
		s.n[i] = coarse << p.depth(coarse)
	}
	return s
}

// Along a rate the network gets worse as the value falls (monotoneFields:
// link.rate −1): by hand on 0..8 Mbit/s in steps of 1, a failure
// measured at 4 carries to 0..4 and a success at 6 to 6..8; 5 stays
// undecided.
func TestInferenceRunsDownARate(t *testing.T) {
	s := searchWith([]Param{{Path: "link.rate", Low: 0, High: 8, Unit: "Mbit", Resolution: 1}}, []int{-1}, 2)
	if s.n[0] != 8 {
		t.Fatalf("lattice of %d steps, want 8", s.n[0])
	}
	decided(s, [2]int{4, 0}, string(advise.Fails))
	decided(s, [2]int{6, 0}, string(advise.Meets))
	own := s.ownStatuses()
	for i := 0; i <= 8; i++ {
		want := Undecided
		switch {
		case i <= 4:
			want = string(advise.Fails)
		case i >= 6:
			want = string(advise.Meets)
		}
		if st, _ := s.statusAt([2]int{i, 0}, own); st[0] != want || st[1] != want {
			t.Errorf("rate %d Mbit/s: %v, want %s for both", i, st, want)
		}
	}
}

// Nothing is inferred across an axis with no declared direction: on loss
// (+1) × a request interval (no assumption), a failure measured at (2,2)
// carries to (3,2) and (4,2) only, a success at (1,3) to (0,3) only. By
// hand on the 5x5 lattice: 3 failing points (1 measured), 2 meeting (1
// measured), 20 undecided.
func TestNothingIsInferredAcrossAFreeAxis(t *testing.T) {
	loss := Param{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}
	interval := Param{Path: "workload.interval", Low: 5, High: 45, Unit: "ms", Resolution: 10}
	s := searchWith([]Param{loss, interval}, []int{1, 0}, 2)
	decided(s, [2]int{2, 2}, string(advise.Fails))
	decided(s, [2]int{1, 3}, string(advise.Meets))
	own := s.ownStatuses()
	counts := map[string]int{}
	for _, idx := range s.lattice() {
		i, j := idx[0], idx[1]
		want := Undecided
		switch {
		case j == 2 && i >= 2:
			want = string(advise.Fails)
		case j == 3 && i <= 1:
			want = string(advise.Meets)
		}
		st, _ := s.statusAt(idx, own)
		if st[0] != want {
			t.Errorf("(%d,%d): %s, want %s", i, j, st[0], want)
		}
		counts[st[0]]++
	}
	if counts[string(advise.Fails)] != 3 || counts[string(advise.Meets)] != 2 || counts[Undecided] != 20 {
		t.Errorf("statuses %v, want 3 fails, 2 meets, 20 undecided", counts)
	}
}

// The best that statuses alone decide (statusBest's comment): None when
// every stack fails, the one that meets when every other fails, and
// nothing while another is still open: a stack that meets beside one
// undecided may yet be beaten by it.
func TestTheBestFromStatusesWaitsForTheOthers(t *testing.T) {
	stacks := []string{"quic", "tcp", "h3"}
	meets, fails := string(advise.Meets), string(advise.Fails)
	for _, c := range []struct {
		status []string
		want   string
	}{
		{[]string{fails, fails, fails}, None},
		{[]string{fails, meets, fails}, "tcp"},
		{[]string{meets, Undecided, fails}, ""},
		{[]string{meets, meets, fails}, ""},
	} {
		if got := statusBest(stacks, c.status); got != c.want {
			t.Errorf("statuses %v: best %q, want %q", c.status, got, c.want)
		}
	}
}

// The fewest repetitions that can decide anything read the range's far
// end from the bound, whichever side it is on (fewestToDecide). By hand,
// study A's map (4 stacks, 25 points: 1/alpha' = 25·5/0.05 = 2500) with
// deadline_miss_pct <= 99 on [0, 100]: the far end is 0, 99 below the
// bound (y = 0, m = 0.99), where the bets on "below" multiply by 1 +
// (k/11)/0.01·0.99 = 1 + 9k: TestTheBoundedBetByHand's case mirrored, 806
// at n = 2 and above 2500 at n = 3 (Σ (1+9k)³/20 alone is above 37 000):
// 3. Read at the top (100, one above the bound) the bets pay at most
// (1 + 10/1089) a repetition and the t mixture's ceiling, halved, decides
// only at n = 7 (3125/2 at n = 6, 24389/2 at n = 7).
func TestTheFewestToDecideReadTheFarEnd(t *testing.T) {
	loss := Param{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}
	rtt := Param{Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}
	cfg := Config{Params: []Param{loss, rtt}, Stacks: []string{"quic", "tcp", "h3", "h1s"},
		Require: []advise.Requirement{{Metric: "deadline_miss_pct", Op: "<=", Bound: 99}}, MaxPoints: 25, MaxReps: 10, Monotone: []int{1, 1}}
	cfg.Defaults()
	s := &search{cfg: cfg, comps: comparisons(cfg.Stacks, cfg.Require), points: map[[2]int]*PointResult{}}
	if got := s.fewestToDecide(); got != 3 {
		t.Errorf("deadline_miss_pct <= 99: fewest repetitions to decide %d, want 3", got)
	}
}

// The map reports the error rate its own verdicts share and among how
// many reported decisions (Map.Tests, MapAlpha; the answer and
// explore.json print both). By hand, three stacks and one requirement:
// each point reports 3 requirement verdicts and one best, 4 decisions
// (Shares' comment: the 3 pairs split the best's share, 12 each), so
// over 5 points the map's alpha is shared among 5 · 4 = 20 (not among
// 5 · 12 = 60, the pairs' divisor); with alpha 0.05 and a fifth kept for
// the ablations, the map's own is 0.05 · 0.8 = 0.04 and the ablations'
// 0.01.
func TestTheMapReportsItsShareOfAlpha(t *testing.T) {
	lab := &fakeLab{seed: 9, own: 1, delay: func(string, []float64) float64 { return 20 }}
	cfg := Config{Params: []Param{lossRange}, Stacks: []string{"quic", "tcp", "quic-again"}, Require: require(1000),
		Coarse: 2, MaxPoints: 5, MaxReps: 3, Alpha: 0.05, WhyShare: 0.2}
	m, err := Run(context.Background(), cfg, lab)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tests != 20 {
		t.Errorf("the map's alpha shared among %d decisions, want 5 points × 4 = 20", m.Tests)
	}
	if !(math.Abs(m.MapAlpha()-0.04) <= 1e-12) || !(math.Abs(m.WhyAlpha()-0.01) <= 1e-12) {
		t.Errorf("map alpha %v, ablations' %v: want 0.04 and 0.01", m.MapAlpha(), m.WhyAlpha())
	}
}
