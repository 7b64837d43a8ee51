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
func (e *Evidence) Observe(r Rule, d []float64) {
	le := r.LogE(d)
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
