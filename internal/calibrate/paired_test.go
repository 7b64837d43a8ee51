package calibrate

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// fakeRounds draws k rounds of n samples a side from a skewed distribution
// (a floor plus an exponential tail), B shifted by shift, and every round
// of both sides shifted by the same host drift: what interleaving is for.
func fakeRounds(seed uint64, k, n int, shift time.Duration) Rounds {
	rng := rand.New(rand.NewPCG(seed, 1))
	draw := func(drift time.Duration) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = 50*time.Microsecond + drift + time.Duration(rng.ExpFloat64()*float64(10*time.Microsecond))
		}
		return s
	}
	var r Rounds
	for i := range k {
		drift := time.Duration(i) * 20 * time.Microsecond // the host slows down round by round
		r.A = append(r.A, draw(drift))
		b := draw(drift)
		for j := range b {
			b[j] += shift
		}
		r.B = append(r.B, b)
	}
	return r
}

func TestQuantileDifferenceCoversTheTrueShift(t *testing.T) {
	for _, shift := range []time.Duration{0, 5 * time.Microsecond, 30 * time.Microsecond} {
		want := float64(shift.Nanoseconds()) / 1e3
		for _, q := range []float64{0.5, 0.99} {
			covered, trials := 0, 40
			for seed := range uint64(trials) {
				d, err := QuantileDifference(fakeRounds(seed, 8, 400, shift), q, 400, seed)
				if err != nil {
					t.Fatal(err)
				}
				if d.Low > d.Estimate || d.Estimate > d.High {
					t.Fatalf("shift %v q %g: estimate %g outside its interval [%g, %g]", shift, q, d.Estimate, d.Low, d.High)
				}
				if d.Low <= want && want <= d.High {
					covered++
				}
			}
			// A 95 % interval, bootstrapped from 8 rounds: honest
			// coverage is somewhat below 95 %; far below means the
			// interval ignores a source of noise.
			if covered < trials*3/4 {
				t.Errorf("shift %v q %g: the interval held the true shift in %d of %d trials", shift, q, covered, trials)
			}
		}
	}
}

func TestQuantileDifferenceSeparatesARealShift(t *testing.T) {
	d, err := QuantileDifference(fakeRounds(7, 10, 2000, 30*time.Microsecond), 0.5, 500, 7)
	if err != nil {
		t.Fatal(err)
	}
	if d.Low <= 0 {
		t.Errorf("a 30 us shift gave the interval [%g, %g], which holds 0", d.Low, d.High)
	}
	again, _ := QuantileDifference(fakeRounds(7, 10, 2000, 30*time.Microsecond), 0.5, 500, 7)
	if again != d {
		t.Errorf("the same rounds and seed gave %+v, then %+v", d, again)
	}
}

func TestQuantileDifferenceRefusesTooFewRounds(t *testing.T) {
	for name, r := range map[string]Rounds{
		"one round":     fakeRounds(1, 1, 10, 0),
		"unpaired":      {A: fakeRounds(1, 3, 10, 0).A, B: fakeRounds(1, 2, 10, 0).B},
		"an empty side": {A: [][]time.Duration{{1}, {}}, B: [][]time.Duration{{1}, {2}}},
	} {
		if _, err := QuantileDifference(r, 0.5, 10, 1); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestInterleaveRunsABBA(t *testing.T) {
	var order []string
	side := func(name string, v time.Duration) func() ([]time.Duration, error) {
		return func() ([]time.Duration, error) {
			order = append(order, name)
			return []time.Duration{v + time.Duration(len(order))}, nil
		}
	}
	r, err := interleave(4, side("A", 0), side("B", 1000))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(order); got != "[A B B A A B B A]" {
		t.Errorf("order %s, want ABBA", got)
	}
	for i := range r.A {
		if r.A[i][0] >= 1000 || r.B[i][0] < 1000 {
			t.Errorf("round %d: A %v, B %v: the sides were swapped", i, r.A[i], r.B[i])
		}
	}
}

// TestDifferenceCheckPassesOnlyWhenTheIntervalLiesWithin: a difference
// passes a "<= target" when its whole 95 % interval is at or below the
// target, fails when the whole interval is above, and is inconclusive
// (neither shown within nor beyond) when the interval straddles it.
func TestDifferenceCheckPassesOnlyWhenTheIntervalLiesWithin(t *testing.T) {
	for _, c := range []struct {
		d                  Difference
		pass, inconclusive bool
	}{
		{Difference{Estimate: 3, Low: 1, High: 5}, true, false},      // inside
		{Difference{Estimate: 3, Low: 1, High: 20}, true, false},     // up to the target itself
		{Difference{Estimate: -11, Low: -20, High: 2}, true, false},  // indistinguishable from zero
		{Difference{Estimate: -11, Low: -20, High: -3}, true, false}, // faster than bare: noise, not inaccuracy
		{Difference{Estimate: 25, Low: 15, High: 40}, false, true},   // may or may not meet it
		{Difference{Estimate: 19, Low: 15, High: 21}, false, true},   // estimate inside, interval not
		{Difference{Estimate: 30, Low: 21, High: 40}, false, false},  // certainly above
	} {
		var r Report
		addDifferenceCheck(&r, "x", c.d, "us", 20, "")
		got := r.Checks[0]
		if got.Pass != c.pass || got.Inconclusive != c.inconclusive {
			t.Errorf("%+v against <= 20: pass %v inconclusive %v, want %v %v", c.d, got.Pass, got.Inconclusive, c.pass, c.inconclusive)
		}
		if len(got.Interval) != 2 || got.Interval[0] != c.d.Low || got.Interval[1] != c.d.High {
			t.Errorf("%+v: interval recorded as %v", c.d, got.Interval)
		}
	}
}

// The bisection over sorted rounds must read the same quantile as pooling
// the resampled rounds and sorting them.
func TestPooledQuantileMatchesPoolingAndSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	r := fakeRounds(3, 5, 37, 0)
	p := newPooled(r.A)
	for trial := range 200 {
		weight := make([]int, len(r.A))
		var pooledSamples []time.Duration
		for i := range weight {
			weight[i] = rng.IntN(3)
			for range weight[i] {
				pooledSamples = append(pooledSamples, r.A[i]...)
			}
		}
		if len(pooledSamples) == 0 {
			continue
		}
		for _, q := range []float64{0, 0.01, 0.5, 0.99, 1} {
			if got, want := p.quantile(weight, q), quantileUs(pooledSamples, q); got != want {
				t.Fatalf("trial %d, weights %v, q %g: %g, want %g", trial, weight, q, got, want)
			}
		}
	}
}

// TestMedianDifferenceFollowsThePairing checks that the rounds' shared drift
// cancels in a paired difference: a small real shift under a drift ten
// times larger is found, and without a shift the interval holds zero.
func TestMedianDifferenceFollowsThePairing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sides := func(shift float64) (a, b []float64) {
		for i := range 8 {
			drift := float64(i) * 10
			a = append(a, 100+drift+rng.NormFloat64())
			b = append(b, 100+drift+shift+rng.NormFloat64())
		}
		return a, b
	}
	a, b := sides(3)
	d, err := MedianDifference(a, b, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Excludes() != 1 || d.Low > 3 || d.High < 3 {
		t.Errorf("a shift of 3 under a drift of 70: %+v", d)
	}
	a, b = sides(0)
	if d, _ := MedianDifference(a, b, 1000, 1); d.Excludes() != 0 {
		t.Errorf("no shift: %+v excludes zero", d)
	}
	if d, _ := MedianDifference(b, a, 1000, 1); d.Excludes() != 0 {
		t.Errorf("no shift, sides swapped: %+v excludes zero", d)
	}
	a, b = sides(-3)
	if d, _ := MedianDifference(a, b, 1000, 1); d.Excludes() != -1 {
		t.Errorf("a shift of -3: %+v", d)
	}
	if _, err := MedianDifference([]float64{1}, []float64{2}, 10, 1); err == nil {
		t.Error("one round: no error")
	}
	if _, err := MedianDifference([]float64{1, 2}, []float64{2}, 10, 1); err == nil {
		t.Error("unpaired rounds: no error")
	}
}
