// Package explore maps where an answer changes over a range of networks:
// given parameters with ranges (any scenario field, such as link.loss from
// 0 % to 5 %), the stacks and the application's requirements, it measures a
// coarse grid, refines where neighbouring points' verdicts disagree
// (bisection in one dimension, splitting the squares whose corners disagree
// in two), repeats each point only until its comparisons are decided by a
// sequential rule whose error rate holds at every look, and locates each
// boundary with an interval. It measures through a Measurer, so that the
// search is tested without a network; package experiment runs its rounds
// as ordinary cells of a run directory.
package explore

import (
	"fmt"
	"math"
)

// Rule is the sequential test a point's comparisons are decided by. Each
// turns the repetitions so far into an e-value: a non-negative statistic
// whose expectation under the null hypothesis (no difference; the value
// at the bound) is at most 1 at every sample size, so that by Ville's
// inequality P(sup_n E_n >= 1/alpha) <= alpha. A comparison is decided
// when its e-value reaches 1/alpha, however often it was looked at: a
// fixed-n test re-run after every repetition has no such guarantee.
type Rule string

const (
	// TMixture is the scale-invariant Gaussian mixture (the sequential t
	// test): the Bayes factor of the one-sample t statistic with a normal
	// prior N(0, g) on the standardised effect and the right Haar prior
	// 1/sigma on the spread. Lai (1976), "On confidence sequences", Ann.
	// Statist. 4(2); its closed form is Rouder et al. (2009), "Bayesian t
	// tests for accepting and rejecting the null hypothesis", Psychon.
	// Bull. Rev. 16, eq. (1) at fixed g; Pérez-Ortiz, Lardy, de Heide and
	// Grünwald (2024), "E-statistics, group invariance and anytime-valid
	// testing", Ann. Statist. 52(4), show that with the right Haar prior
	// it is a test martingale under the null for every sigma, so Ville's
	// inequality holds. It assumes roughly normal differences between
	// repetitions; large, consistent effects decide in a few repetitions.
	TMixture Rule = "t"
	// SignMixture is distribution-free: the sign of each repetition's
	// difference is a fair coin under the null (any continuous
	// difference with median 0, as two names for the same stack give),
	// and the e-value is the likelihood ratio of the signs mixed over a
	// uniform prior on the coin's bias against 1/2 (Robbins' mixture
	// martingale; the "always valid p-value" of Johari, Koomen, Pekelis
	// and Walsh (2017), "Peeking at A/B tests", KDD, for a Bernoulli
	// stream). It needs at least eight repetitions of one sign to reach
	// 1/0.05, whatever the effect's size.
	SignMixture Rule = "sign"
)

// priorScale is g, the variance of the t mixture's prior on the
// standardised effect (mean difference over its spread). A paired
// comparison between stacks meeting the same seeded losses has effects
// of several spreads where a stack is clearly better; g = 4 (a prior
// standard deviation of 2 spreads) lets such an effect decide in five or
// six repetitions while a small one waits for more.
const priorScale = 4.0

// Rules are the rules a scenario may name.
var Rules = []Rule{TMixture, SignMixture}

// Valid says whether r is a known rule.
func (r Rule) Valid() error {
	for _, k := range Rules {
		if r == k {
			return nil
		}
	}
	return fmt.Errorf("rule %q: want t or sign", string(r))
}

// LogE is the log of the rule's e-value for differences d (each
// repetition's value minus its reference: the other stack's value in the
// same repetition, or the requirement's bound) against the null that
// they centre on 0. NaN and infinite differences are left out of the t
// mixture (it has no spread for them) and counted by their sign in the
// sign mixture.
func (r Rule) LogE(d []float64) float64 {
	if r == SignMixture {
		return signLogE(d)
	}
	return tLogE(d, priorScale)
}

// tLogE is log of the t mixture's Bayes factor (Rouder et al. 2009, eq. 1
// with g fixed):
//
//	BF = (1+n g)^(-1/2) * [(1 + t²/ν) / (1 + t²/((1+n g) ν))]^((ν+1)/2)
//
// with t the one-sample t statistic and ν = n-1. With no spread at all
// and a mean away from 0 (t infinite) the factor is its limit
// (1+n g)^(ν/2); with fewer than two values it is 1 (no evidence).
func tLogE(d []float64, g float64) float64 {
	var v []float64
	for _, x := range d {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	n := float64(len(v))
	if len(v) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= n
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	nu := n - 1
	sd := math.Sqrt(ss / nu)
	scale := 1 + n*g
	if sd == 0 || sd < 1e-12*math.Abs(mean) {
		if mean == 0 {
			return 0
		}
		return nu / 2 * math.Log(scale)
	}
	t2 := mean * mean / (sd * sd / n)
	return -0.5*math.Log(scale) + (nu+1)/2*(math.Log1p(t2/nu)-math.Log1p(t2/(scale*nu)))
}

// signLogE is log of the uniform mixture of the signs' likelihood ratio
// against a fair coin: 2^n · s! f! / (n+1)! for s positive and f
// negative differences among n = s+f (ties and NaN carry no sign).
func signLogE(d []float64) float64 {
	s, f := 0.0, 0.0
	for _, x := range d {
		switch {
		case x > 0:
			s++
		case x < 0:
			f++
		}
	}
	n := s + f
	ls, _ := math.Lgamma(s + 1)
	lf, _ := math.Lgamma(f + 1)
	ln, _ := math.Lgamma(n + 2)
	return n*math.Ln2 + ls + lf - ln
}

// betGrid is D, the number of fixed bets per side the bounded rule
// averages (bettingLogE).
const betGrid = 10

// bettingLogE is log of a betting e-process for the mean of bounded
// values (Waudby-Smith and Ramdas (2023), "Estimating means of bounded
// random variables by betting", J. R. Stat. Soc. B 86(1)): d are each
// repetition's value minus the requirement's bound, each value lies in
// [lo, hi] (the metric's own bounds: 0 and 100 for a share in percent),
// and the null is that the values' mean is the bound. Scaled to [0, 1],
// y = (value − lo)/(hi − lo) and m = (bound − lo)/(hi − lo); a gambler
// who stakes λ on the mean being above m multiplies her capital by
//
//	1 + λ (y − m)
//
// per repetition, which is non-negative for every y in [0, 1] when
// 0 ≤ λ ≤ 1/m, and whose expectation under the null is 1: her capital
// K⁺ = Π (1 + λ (y_i − m)) is a test martingale (the paper's capital
// process, eq. (2)); staking on "below" multiplies by 1 − λ (y − m),
// non-negative for 0 ≤ λ ≤ 1/(1−m). The paper's hedged process averages
// the two sides, and its diversified Kelly bettor (dKelly) averages the
// capital of a grid of fixed bets: an average of test martingales is one.
// This is both: the mean of 2D capitals, D bets per side at λ = c/m and
// c/(1−m) for c = 1/(D+1), ..., D/(D+1), each clipped inside its range
// so that every factor stays ≥ 0. The paper's predictable plug-in bet
// (λ from the running mean and variance) is tuned for narrow confidence
// sequences at moderate effects; here the question is a requirement far
// from the values (100 % of deadlines missed against a 1 % bound), where
// the largest bet pays: at y = 1, m = 0.01 it multiplies by 91 per
// repetition, where the plug-in's first bets multiply by about 11, 8, 7.
// It counts what the t mixture cannot: a spread of zero at a share of
// 100 % is no evidence to a scale-invariant rule beyond (1+ng)^(ν/2), to
// this one it is. Values outside [lo, hi] are clipped to them (they
// cannot be, by the metric's definition); NaN values carry no bet; a
// bound at or beyond an end leaves nothing to bet on (log 1 = 0).
func bettingLogE(d []float64, lo, hi, bound float64) float64 {
	if !(hi > lo) || bound <= lo || bound >= hi {
		return 0
	}
	m := (bound - lo) / (hi - lo)
	logs := make([]float64, 0, 2*betGrid)
	for side := range 2 {
		for k := 1; k <= betGrid; k++ {
			c := float64(k) / float64(betGrid+1)
			lambda := c / m
			if side == 1 {
				lambda = -c / (1 - m)
			}
			l := 0.0
			for _, x := range d {
				if math.IsNaN(x) {
					continue
				}
				v := x + bound
				if math.IsInf(v, 1) {
					v = hi
				}
				y := (math.Min(math.Max(v, lo), hi) - lo) / (hi - lo)
				l += math.Log1p(lambda * (y - m))
			}
			logs = append(logs, l)
		}
	}
	return logMeanExp(logs)
}

// floorBetLogE is log of a betting e-process for the mean of values
// with a floor and no ceiling (a latency: never below 0, no largest
// value), against the null that their mean is at most the bound: d are
// each repetition's value minus the bound, lo the floor. A gambler who
// stakes λ ≥ 0 on the mean being above the bound multiplies her capital
// by
//
//	1 + λ (x − bound)
//
// per repetition, which is non-negative for every x ≥ lo when λ ≤
// 1/(bound − lo), and whose expectation is 1 + λ (mean − bound) ≤ 1
// under the null: the capital is a test supermartingale (Waudby-Smith and
// Ramdas (2023), J. R. Stat. Soc. B 86(1), the capital process for a
// variable bounded on one side; Ville's inequality holds at every look).
// As bettingLogE, it averages D fixed bets, λ = c/(bound − lo) for c =
// 1/(D+1), ..., D/(D+1), so every factor is at least 1 − c > 0. Only
// this side exists: a bet on "below" multiplies by 1 − λ (x − bound),
// negative for a large enough x whatever λ > 0, so without a ceiling no
// bet (and no test of any kind, Bahadur and Savage (1956), Ann. Math.
// Statist. 27(4)) can show a mean below a bound: a latency's "meets" is
// left to the t mixture and its normal model. The bet pays in proportion
// to how far above the bound the values lie (at x = 4·bound the largest
// bet multiplies by 1 + 3·10/11 = 3.7 per repetition, at 1.3·bound by
// 1.27), so it decides a clear failure that is many bounds away sooner
// than the t mixture and a near one no sooner. NaN values carry no bet;
// values below the floor (which the metric cannot take) count as the
// floor; a bound at or below the floor leaves nothing to bet on.
func floorBetLogE(d []float64, lo, bound float64) float64 {
	if bound <= lo {
		return 0
	}
	logs := make([]float64, 0, betGrid)
	for k := 1; k <= betGrid; k++ {
		lambda := float64(k) / float64(betGrid+1) / (bound - lo)
		l := 0.0
		for _, x := range d {
			if math.IsNaN(x) {
				continue
			}
			v := math.Max(x+bound, lo)
			l += math.Log1p(lambda * (v - bound))
		}
		logs = append(logs, l)
	}
	return logMeanExp(logs)
}

// logMeanExp is log of the mean of exp(l) over ls, without overflow.
func logMeanExp(ls []float64) float64 {
	top := math.Inf(-1)
	for _, l := range ls {
		top = math.Max(top, l)
	}
	if math.IsInf(top, -1) {
		return top
	}
	sum := 0.0
	for _, l := range ls {
		sum += math.Exp(l - top)
	}
	return top + math.Log(sum/float64(len(ls)))
}

// Evidence is a running comparison's state: the largest e-value seen at
// any look (an always-valid p-value is its reciprocal) and the sign of
// the mean difference when it was reached.
type Evidence struct {
	MaxLogE float64
	// Sign is +1 when the differences were positive on the whole at
	// the look that reached MaxLogE, -1 when negative.
	Sign int
	// Mean is the differences' mean at the latest look (NaN: none).
	Mean float64
	N    int
}

// Observe updates the evidence with all the differences so far.
func (e *Evidence) Observe(r Rule, d []float64) { e.observe(r.LogE(d), d) }

// observe updates the evidence with the e-value le of the differences d.
func (e *Evidence) observe(le float64, d []float64) {
	m := finiteMean(d)
	e.Mean, e.N = m, len(d)
	if le > e.MaxLogE || e.Sign == 0 {
		if le > e.MaxLogE {
			e.MaxLogE = le
		}
		switch {
		case m > 0 || (math.IsNaN(m) && positives(d) > len(d)/2):
			e.Sign = 1
		case m < 0 || (math.IsNaN(m) && positives(d) < len(d)/2):
			e.Sign = -1
		}
	}
}

// P is the always-valid p-value: min(1, 1/sup E), multiplied by the
// number of tests the level is shared among (Bonferroni).
func (e Evidence) P(tests int) float64 {
	return math.Min(1, float64(max(tests, 1))*math.Exp(-e.MaxLogE))
}

// Decided says whether the evidence rejects the null at level alpha
// shared among tests: sup E >= tests/alpha.
func (e Evidence) Decided(alpha float64, tests int) bool {
	return e.Sign != 0 && e.MaxLogE >= math.Log(float64(max(tests, 1))/alpha)
}

func finiteMean(d []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range d {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func positives(d []float64) int {
	n := 0
	for _, x := range d {
		if x > 0 {
			n++
		}
	}
	return n
}
