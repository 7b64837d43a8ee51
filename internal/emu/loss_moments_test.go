package emu

import (
	"math"
	"testing"
)

// TestExpectedLossOfBernoulliAndGilbertByHand: the mean loss and the variance per packet of
// the loss count that ExpectedLoss gives the calibration's and the
// testbed's confidence intervals, worked by hand.
//   - Bernoulli 5 %: mean 0.05, variance p(1−p) = 0.0475.
//   - Gilbert's simple chain (every bad packet lost, no good one) with
//     p = 0.1, r = 0.4: the loss is the bad state's indicator, π = p/(p+r)
//     = 0.2; its lag-k autocorrelation is λ^k with λ = 1 − p − r = 0.5, so
//     Var(S_n)/n → π(1−π)(1 + 2·Σ_{k≥1} λ^k) = π(1−π)(1 + 2λ/(1−λ)) =
//     0.16 · 3 = 0.48, three times a Bernoulli loss of the same mean: the
//     bursts widen the interval.
//   - Gilbert-Elliott with 1−h = 0.5, 1−k = 0.1 and the same chain: mean
//     0.2·0.5 + 0.8·0.1 = 0.18; the Bernoulli part 0.18·0.82 = 0.1476 plus
//     the state's share 2·π(1−π)·(0.5−0.1)²·λ/(1−λ) = 2·0.16·0.16·1 =
//     0.0512: 0.1988.
func TestExpectedLossOfBernoulliAndGilbertByHand(t *testing.T) {
	for _, c := range []struct {
		name           string
		l              LossConfig
		mean, variance float64
	}{
		{"bernoulli 5 %", LossConfig{Model: LossBernoulli, Rate: 0.05}, 0.05, 0.0475},
		{"gilbert p 0.1 r 0.4", LossConfig{Model: LossGilbert, P: 0.1, R: 0.4, OneMinusH: 1, OneMinusK: 0}, 0.2, 0.48},
		{"gilbert-elliott 1-h 0.5 1-k 0.1", LossConfig{Model: LossGilbert, P: 0.1, R: 0.4, OneMinusH: 0.5, OneMinusK: 0.1}, 0.18, 0.1988},
		{"none", LossConfig{}, 0, 0},
	} {
		m, v := c.l.ExpectedLoss()
		if !(math.Abs(m-c.mean) > 1e-12 || math.Abs(v-c.variance) <= 1e-12) {
			t.Errorf("%s: mean %v, variance per packet %v; want %v, %v", c.name, m, v, c.mean, c.variance)
		}
	}
}
