package calibrate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"tlab/internal/metrics"
)

// Rounds are samples of a baseline (A) and a treatment (B) measured
// alternately: round i holds A[i] and B[i], taken one right after the
// other, so that whatever the host did at the time weighs on both.
type Rounds struct {
	A, B [][]time.Duration
}

// interleave measures a and b alternately for rounds rounds, in ABBA order
// (A B, B A, A B, ...), so that a drift of the host over the run weighs on
// both sides alike rather than on whichever ran later.
func interleave(rounds int, a, b func() ([]time.Duration, error)) (Rounds, error) {
	as, bs, err := alternate(rounds, a, b)
	return Rounds{A: as, B: bs}, err
}

// alternate is interleave for any kind of measurement: it returns each
// side's results by round.
func alternate[T any](rounds int, a, b func() (T, error)) (as, bs []T, err error) {
	for i := 0; i < rounds; i++ {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		x, err := first()
		if err != nil {
			return as, bs, err
		}
		y, err := second()
		if err != nil {
			return as, bs, err
		}
		if i%2 == 1 {
			x, y = y, x
		}
		as, bs = append(as, x), append(bs, y)
	}
	return as, bs, nil
}

// Difference is B's quantile minus A's over all rounds, and a 95 %
// interval for it.
type Difference struct {
	Estimate, Low, High float64
}

// QuantileDifference estimates the q-quantile of B minus that of A, in
// microseconds, pooled over the rounds, with a 95 % percentile interval
// from a paired bootstrap: it resamples whole rounds (an A and its B
// together) with replacement, so the interval carries both the sampling
// noise of two tails and the host's drift between rounds, which samples
// within a round share. The seed makes it reproducible.
func QuantileDifference(r Rounds, q float64, resamples int, seed uint64) (Difference, error) {
	k := len(r.A)
	if k < 2 || len(r.B) != k {
		return Difference{}, errors.New("a paired interval needs at least two rounds of both sides")
	}
	for i := range k {
		if len(r.A[i]) == 0 || len(r.B[i]) == 0 {
			return Difference{}, errors.New("a round without samples")
		}
	}
	a, b := newPooled(r.A), newPooled(r.B)
	weight := make([]int, k)
	diff := func(pick []int) float64 {
		clear(weight)
		for _, i := range pick {
			weight[i]++
		}
		return b.quantile(weight, q) - a.quantile(weight, q)
	}
	return bootstrap(k, resamples, seed, diff), nil
}

// bootstrap is stat over all k rounds, with a 95 % percentile interval
// from resamples of the rounds drawn with replacement; stat is given the
// rounds' indices.
func bootstrap(k, resamples int, seed uint64, stat func(rounds []int) float64) Difference {
	all := make([]int, k)
	for i := range all {
		all[i] = i
	}
	d := Difference{Estimate: stat(all)}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	boot := make([]float64, resamples)
	pick := make([]int, k)
	for j := range boot {
		for i := range pick {
			pick[i] = rng.IntN(k)
		}
		boot[j] = stat(pick)
	}
	slices.Sort(boot)
	d.Low, d.High = percentile(boot, 0.025), percentile(boot, 0.975)
	return d
}

// pooled holds one side's rounds sorted, to read a quantile of any
// resample of whole rounds without pooling and sorting it again.
type pooled struct {
	rounds [][]float64 // each round's samples in microseconds, sorted
	values []float64   // every sample, sorted
}

func newPooled(rounds [][]time.Duration) pooled {
	var p pooled
	for _, r := range rounds {
		us := sortedUs(r)
		p.rounds = append(p.rounds, us)
		p.values = append(p.values, us...)
	}
	slices.Sort(p.values)
	return p
}

// sortedUs is d in microseconds, sorted.
func sortedUs(d []time.Duration) []float64 {
	us := make([]float64, len(d))
	for i, v := range d {
		us[i] = float64(v.Nanoseconds()) / 1e3
	}
	slices.Sort(us)
	return us
}

// quantile is the q-quantile (nearest rank, as quantileUs) of the rounds
// taken weight[i] times each: the smallest sample value with at least
// ceil(q N) samples at or below it, found by bisection over all values.
func (p pooled) quantile(weight []int, q float64) float64 {
	n := 0
	for i, w := range weight {
		n += w * len(p.rounds[i])
	}
	rank := max(int(math.Ceil(q*float64(n))), 1)
	atOrBelow := func(v float64) int {
		c := 0
		for i, w := range weight {
			if w > 0 {
				c += w * sortedCountAtOrBelow(p.rounds[i], v)
			}
		}
		return c
	}
	lo, hi := 0, len(p.values)-1 // the answer's index lies in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		if atOrBelow(p.values[mid]) >= rank {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return p.values[lo]
}

func sortedCountAtOrBelow(sorted []float64, v float64) int {
	return sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })
}

// percentile reads a sorted slice at p by the nearest rank (NaN when
// empty): the one quantile rule of calibration.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// atMostWithin is the rule for a check whose value is a difference of two
// noisy measurements and whose target is an upper bound: it passes when
// the whole 95 % interval is at or below the target, fails when the whole
// interval is above it, and is inconclusive when the interval straddles
// it. A value indistinguishable from zero passes, and so does one whose
// interval lies below zero (the emulated path measured faster than the
// bare one: the two paths' own noise, never an inaccuracy of the
// emulator, since a slower emulator cannot make a path faster).
func atMostWithin(d Difference, target float64) (tgt string, pass, inconclusive bool) {
	return fmt.Sprintf("<= %g", target), d.High <= target, d.Low <= target && d.High > target
}

// Scale multiplies the estimate and both ends of the interval by f > 0.
func (d Difference) Scale(f float64) Difference {
	return Difference{Estimate: d.Estimate * f, Low: d.Low * f, High: d.High * f}
}

// addDifferenceCheck records a check on a difference with its interval,
// judged by atMostWithin.
func addDifferenceCheck(r *Report, name string, d Difference, unit string, target float64, detail string) {
	tgt, pass, inconclusive := atMostWithin(d, target)
	r.Checks = append(r.Checks, Check{Name: name, Value: round(d.Estimate), Interval: []float64{round(d.Low), round(d.High)}, Unit: unit, Target: tgt, Pass: pass, Inconclusive: inconclusive, Detail: detail})
}

// MedianDifference estimates the median over rounds of b[i] - a[i], for
// a figure measured once a round on each side (a forwarding rate, a
// goodput, a release error's tail), with a 95 % percentile interval from a
// bootstrap over the rounds' differences. The median, not the mean: one
// round in which the host stalled a side for milliseconds would decide a
// mean. The seed makes it reproducible.
func MedianDifference(a, b []float64, resamples int, seed uint64) (Difference, error) {
	k := len(a)
	if k < 2 || len(b) != k {
		return Difference{}, errors.New("a paired interval needs at least two rounds of both sides")
	}
	picked := make([]float64, k)
	return bootstrap(k, resamples, seed, func(rounds []int) float64 {
		for i, r := range rounds {
			picked[i] = b[r] - a[r]
		}
		return median(picked)
	}), nil
}

// Excludes says whether the interval lies wholly on one side of zero:
// +1 above, -1 below, 0 when it holds zero (the two sides are
// indistinguishable).
func (d Difference) Excludes() int {
	switch {
	case d.Low > 0:
		return 1
	case d.High < 0:
		return -1
	}
	return 0
}

// median is the middle of v (the mean of the two middle values when their
// number is even: metrics' quantile rule at one half), NaN when v is empty.
func median(v []float64) float64 { return metrics.QuantileOf(v, 0.5) }
