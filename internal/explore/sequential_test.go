package explore

import (
	"math"
	"math/rand/v2"
	"testing"

	"tlab/internal/advise"
	"tlab/internal/stats"
)

// The e-values at hand-computed points.
func TestRuleEValuesByHand(t *testing.T) {
	// Sign mixture, 8 positive signs of 8: 2^8 · 8! 0! / 9! = 256/9.
	if got, want := math.Exp(SignMixture.LogE([]float64{1, 2, 3, 4, 5, 6, 7, 8})), 256.0/9; !(math.Abs(got-want) <= 1e-9) {
		t.Errorf("sign e-value of 8 of 8 = %v, want 256/9 = %v", got, want)
	}
	// 4 positive, 4 negative: 2^8 · 4! 4! / 9! = 256·576/362880 = 0.40635.
	if got, want := math.Exp(SignMixture.LogE([]float64{1, -1, 2, -2, 3, -3, 4, -4})), 256.0*576/362880; !(math.Abs(got-want) <= 1e-9) {
		t.Errorf("sign e-value of 4 and 4 = %v, want %v", got, want)
	}
	// t mixture, d = 1, 2, 3: mean 2, sd 1, n 3, t² = 12, ν = 2, g = 4,
	// 1+ng = 13: 13^-1/2 · ((1 + 12/2)/(1 + 12/26))^(3/2)
	// = 0.277350 · (7/1.461538)^1.5 = 0.277350 · 10.48170 = 2.90711.
	if got := math.Exp(TMixture.LogE([]float64{1, 2, 3})); !(math.Abs(got-2.90711) <= 1e-4) {
		t.Errorf("t e-value of 1, 2, 3 = %v, want 2.90711", got)
	}
	// No spread, mean away from 0: the limit (1+ng)^(ν/2) = 13^1 for n = 3.
	if got := math.Exp(TMixture.LogE([]float64{-2, -2, -2})); !(math.Abs(got-13) <= 1e-9) {
		t.Errorf("t e-value of a constant -2 = %v, want 13", got)
	}
	if got := TMixture.LogE([]float64{5}); got != 0 {
		t.Errorf("one value gives evidence %v, want none (log 0)", got)
	}
}

// crossed peeks after every repetition (from the second) up to looks and
// tells whether the test ever rejected at alpha.
func crossed(rule Rule, draw func() float64, looks int, alpha float64) bool {
	var d []float64
	var e Evidence
	for n := 1; n <= looks; n++ {
		d = append(d, draw())
		e.Observe(rule, d)
		if e.Decided(alpha, 1) {
			return true
		}
	}
	return false
}

// Under the null hypothesis, with a look after every repetition, neither
// rule rejects more often than alpha. Ville's inequality bounds the
// chance of ever crossing 1/alpha by alpha = 0.05; over 2000 independent
// sequences the count of crossings is then Binomial(2000, p <= 0.05):
// mean <= 100, standard deviation <= sqrt(2000·0.05·0.95) = 9.75, so a
// count above 100 + 3·9.75 = 129 would be a rate above alpha.
func TestRulesHoldTheirLevelAtEveryLook(t *testing.T) {
	const sequences, looks, alpha, limit = 2000, 30, 0.05, 129
	nulls := map[string]func(r *rand.Rand) func() float64{
		// Normal differences of any spread (the t mixture's model).
		"normal": func(r *rand.Rand) func() float64 {
			sigma := math.Exp(r.NormFloat64() * 2)
			return func() float64 { return sigma * r.NormFloat64() }
		},
		// Heavy tails, symmetric (Laplace): two names for one stack on a
		// noisy host.
		"laplace": func(r *rand.Rand) func() float64 {
			return func() float64 {
				x := r.ExpFloat64()
				if r.IntN(2) == 0 {
					return -x
				}
				return x
			}
		},
	}
	for _, rule := range Rules {
		for name, null := range nulls {
			r := rand.New(rand.NewPCG(7, 11))
			count := 0
			for range sequences {
				if crossed(rule, null(r), looks, alpha) {
					count++
				}
			}
			t.Logf("%s rule, %s null: %d of %d sequences crossed", rule, name, count, sequences)
			if count > limit {
				t.Errorf("%s rule under a %s null: %d of %d sequences rejected at some look, above the bound %d for alpha = %v", rule, name, count, sequences, limit, alpha)
			}
		}
	}
}

// The fixed-n t test re-run after every repetition does not hold its
// level (Armitage, McPherson and Rowe (1969), "Repeated significance
// tests on accumulating data", J. R. Stat. Soc. A 132: about 0.25 for
// 20 to 30 looks at a nominal 0.05): the reason the rules above exist.
// With the same 2000 sequences a rate above 0.10 (count above 200) shows
// the peeking problem the simulation above would catch.
func TestFixedNTestAtEveryLookDoesNotHold(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	count := 0
	for range 2000 {
		var d []float64
		for n := 1; n <= 30; n++ {
			d = append(d, r.NormFloat64())
			if lo, hi := stats.MeanInterval(d, 0.95); lo > 0 || hi < 0 {
				count++
				break
			}
		}
	}
	if count <= 200 {
		t.Errorf("the fixed-n test peeked at 29 times rejected %d of 2000 null sequences; the literature says about 500", count)
	}
}

// A clear effect decides quickly and in its direction: differences of
// mean -3 spreads (the first stack faster) reach 1/0.05 within 10
// repetitions in at least 95 % of sequences under the t mixture (at
// n = 5, t ≈ 3·√5, t² ≈ 45: 21^-1/2 · (12.25/1.536)^2.5 ≈ 39 > 20).
func TestAClearEffectDecidesInItsDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	decided, wrong := 0, 0
	for range 1000 {
		var d []float64
		var e Evidence
		for n := 1; n <= 10; n++ {
			d = append(d, -3+r.NormFloat64())
			e.Observe(TMixture, d)
			if e.Decided(0.05, 1) {
				decided++
				if e.Sign != -1 {
					wrong++
				}
				break
			}
		}
	}
	if decided < 950 || wrong > 0 {
		t.Errorf("a -3 sd effect: %d of 1000 decided within 10 repetitions (want >= 950), %d in the wrong direction", decided, wrong)
	}
}

// The bounded bet at a hand-worked point: two repetitions of 100 % against
// a bound of 1 % on [0, 100]: y = 1, m = 0.01. Bets above: λ = (k/11)/0.01,
// factor 1 + λ·0.99 = 1 + 9k (k = 1..10), squared: Σ (1+9k)² = 100 + 361 +
// 784 + 1369 + 2116 + 3025 + 4096 + 5329 + 6724 + 8281 = 32185. Bets
// below: λ = (k/11)/0.99, factor 1 − k/11, squared: Σ (j/11)² = 385/121 =
// 3.18182. The mean of the 20 capitals: 32188.18/20 = 1609.41. The t
// mixture at no spread, n = 2: (1+2·4)^(1/2) = 3; their mean 806.205.
func TestTheBoundedBetByHand(t *testing.T) {
	d := []float64{99, 99}
	if got := math.Exp(bettingLogE(d, 0, 100, 1)); !(math.Abs(got-1609.409) <= 1e-2) {
		t.Errorf("bet on 100 %%, 100 %% against 1 %% = %v, want 1609.41", got)
	}
	c := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "deadline_miss_pct", Op: "<=", Bound: 1}, Range: []float64{0, 100}}
	if got := math.Exp(c.LogE(TMixture, d)); !(math.Abs(got-806.205) <= 1e-2) {
		t.Errorf("the rule and the bet together = %v, want (3 + 1609.41)/2 = 806.205", got)
	}
	// A bound at the range's end leaves nothing to bet on.
	if got := bettingLogE(d, 0, 100, 100); got != 0 {
		t.Errorf("a bound at the top: log e = %v, want 0", got)
	}
	// The metrics registry gives a share in percent its bounds.
	for _, c := range Comparisons([]string{"x"}, []advise.Requirement{{Metric: "deadline_miss_pct", Op: "<=", Bound: 1}}) {
		if len(c.Range) != 2 || c.Range[0] != 0 || c.Range[1] != 100 {
			t.Errorf("deadline_miss_pct's requirement has range %v, want [0 100]", c.Range)
		}
	}
}

// A stack that misses every deadline against a 1 % bound is decided to
// fail at the third repetition where the t mixture alone needs seven: at
// study A's map (alpha 0.05 over 250 tests, 1/alpha' = 5000) the t
// mixture's ceiling at no spread is (1+4n)^((n-1)/2) = 3, 13, 70, 441,
// 3125, 24389 (n = 2..7); the bet at n = 3 is Σ (1+9k)³/20 + ... ≥
// 10^3·... : (1+90)³/20 = 37674 alone, so the mean with the t's 13 is above
// 5000 (and at n = 2 it is 806, below).
func TestAHundredPercentMissDecidesInThreeRepetitions(t *testing.T) {
	c := Comparisons([]string{"x"}, []advise.Requirement{{Metric: "deadline_miss_pct", Op: "<=", Bound: 1}})[0]
	rep := map[string]map[string]float64{"x": {"deadline_miss_pct": 100}}
	for n, want := range map[int]string{2: Undecided, 3: string(advise.Fails)} {
		var reps []map[string]map[string]float64
		for range n {
			reps = append(reps, rep)
		}
		if got := c.Judge(reps, TMixture, 0.05, 250).Label; got != want {
			t.Errorf("100 %% missed in %d repetitions against <= 1 %%: %s, want %s", n, got, want)
		}
	}
}

// Under the null (the values' mean at the bound), with a look after every
// repetition, the bounded bet rejects no more often than alpha, whatever
// the values' distribution on [0, 100]: the same bound as
// TestRulesHoldTheirLevelAtEveryLook, 129 of 2000 sequences at alpha =
// 0.05 (Ville's inequality, Binomial(2000, 0.05) + 3 sd). The hardest
// nulls for a bet are the two-point ones (0 or 100 with the bound's
// chance); a symmetric null about the bound also checks the rule and the
// bet together (the t mixture assumes a symmetric spread).
func TestTheBoundedBetHoldsItsLevelAtEveryLook(t *testing.T) {
	const sequences, looks, alpha, limit = 2000, 30, 0.05, 129
	type null struct {
		bound float64
		draw  func(r *rand.Rand, bound float64) float64
		both  bool
	}
	twoPoint := func(r *rand.Rand, bound float64) float64 {
		if r.Float64() < bound/100 {
			return 100
		}
		return 0
	}
	uniform := func(r *rand.Rand, bound float64) float64 { return 2 * bound * r.Float64() }
	nulls := map[string]null{
		"two-point at 1 %":  {1, twoPoint, false},
		"two-point at 10 %": {10, twoPoint, false},
		"two-point at 50 %": {50, twoPoint, false},
		"uniform 0..2 %":    {1, uniform, true},
		"uniform 0..40 %":   {20, uniform, true},
	}
	for name, nl := range nulls {
		r := rand.New(rand.NewPCG(13, 17))
		c := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "m", Op: "<=", Bound: nl.bound}, Range: []float64{0, 100}}
		count := 0
		for range sequences {
			var d []float64
			var e Evidence
			for n := 1; n <= looks; n++ {
				d = append(d, nl.draw(r, nl.bound)-nl.bound)
				le := bettingLogE(d, 0, 100, nl.bound)
				if nl.both {
					le = c.LogE(TMixture, d)
				}
				e.observe(le, d)
				if e.Decided(alpha, 1) {
					count++
					break
				}
			}
		}
		t.Logf("%s: %d of %d sequences crossed", name, count, sequences)
		if count > limit {
			t.Errorf("the bounded bet under a %s null: %d of %d sequences rejected at some look, above %d for alpha = %v", name, count, sequences, limit, alpha)
		}
	}
}

// The floor bet at a hand-worked point: two repetitions of a latency of
// 300 ms against a bound of 100 ms, floor 0: λ = (k/11)/100, factor
// 1 + λ·200 = 1 + 2k/11 (k = 1..10), squared and summed: Σ (1 + 4k/11 +
// 4k²/121) = 10 + 4·55/11 + 4·385/121 = 10 + 20 + 12.72727 = 42.72727;
// the mean of the 10 capitals 4.272727. With the t mixture at no spread,
// n = 2, (1+2·4)^(1/2) = 3: their mean 3.636364.
func TestTheFloorBetByHand(t *testing.T) {
	d := []float64{200, 200}
	if got := math.Exp(floorBetLogE(d, 0, 100)); !(math.Abs(got-4.272727) <= 1e-5) {
		t.Errorf("floor bet on 300, 300 ms against 100 ms = %v, want 4.272727", got)
	}
	c := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "delay_p95_ms", Op: "<=", Bound: 100}, Range: []float64{0}}
	if got := math.Exp(c.LogE(TMixture, d)); !(math.Abs(got-3.636364) <= 1e-5) {
		t.Errorf("the rule and the floor bet together = %v, want (3 + 4.272727)/2 = 3.636364", got)
	}
	// Values below the bound are no bet for "above": factor 1 − c·0.5 < 1.
	if got := floorBetLogE([]float64{-50, -50}, 0, 100); got >= 0 {
		t.Errorf("the floor bet grew on values below the bound: log e = %v", got)
	}
	// ... and there the rule's evidence is not halved: 50 ms twice
	// against 100 ms is the t mixture's 3 (no spread, n = 2).
	if got := math.Exp(c.LogE(TMixture, []float64{-50, -50})); !(math.Abs(got-3) <= 1e-9) {
		t.Errorf("below the bound the rule with the floor = %v, want the t mixture's 3", got)
	}
	// A bound at the floor leaves nothing to bet on.
	if got := floorBetLogE(d, 100, 100); got != 0 {
		t.Errorf("a bound at the floor: log e = %v, want 0", got)
	}
	// The registry gives a latency its floor and no ceiling: one value.
	for _, c := range Comparisons([]string{"x"}, []advise.Requirement{{Metric: "delay_p95_ms", Op: "<=", Bound: 100}}) {
		if len(c.Range) != 1 || c.Range[0] != 0 {
			t.Errorf("delay_p95_ms's requirement has range %v, want [0] (a floor only)", c.Range)
		}
	}
}

// A latency far above its bound fails sooner with the floor bet: at study
// D's map (alpha 0.05 over 75 tests, 1/alpha' = 1500), values of 1200 ms
// against 100 ms (eleven bounds above it) with no spread. The bet's
// factors are 1 + (k/11)·1100/100 = 1 + k (k = 1..10): at n = 3 the mean
// capital is (Σ_{j=2..11} j³)/10 = (4356 − 1)/10 = 435.5, with the t
// mixture's 13: 224.3 < 1500; at n = 4, (Σ_{j=2..11} j⁴)/10 = (39974 −
// 1)/10 = 3997.3, with the t's 17^1.5 = 70.09: 2033.7 >= 1500, "fails".
// The t mixture alone: 441 at n = 5, 3125 at n = 6.
func TestALatencyFarAboveItsBoundFailsInFourRepetitions(t *testing.T) {
	c := Comparisons([]string{"x"}, []advise.Requirement{{Metric: "delay_p95_ms", Op: "<=", Bound: 100}})[0]
	rep := map[string]map[string]float64{"x": {"delay_p95_ms": 1200}}
	for n, want := range map[int]string{3: Undecided, 4: string(advise.Fails)} {
		var reps []map[string]map[string]float64
		for range n {
			reps = append(reps, rep)
		}
		if got := c.Judge(reps, TMixture, 0.05, 75).Label; got != want {
			t.Errorf("1200 ms in %d repetitions against <= 100 ms: %s, want %s", n, got, want)
		}
	}
	c.Range = nil // the t mixture alone
	reps := []map[string]map[string]float64{rep, rep, rep, rep, rep}
	if got := c.Judge(reps, TMixture, 0.05, 75).Label; got != Undecided {
		t.Errorf("the t mixture alone decided 1200 ms against 100 ms in 5 repetitions (%s); its ceiling there is 441 < 1500", got)
	}
}

// Under nulls with the floor 0 and the mean at the bound (or below it:
// the null for "fails" is any mean at most the bound), with a look after
// every repetition, the floor bet rejects no more often than alpha: the
// bound 129 of 2000 sequences at alpha = 0.05 (Ville's inequality,
// Binomial(2000, 0.05) + 3 sd), as TestRulesHoldTheirLevelAtEveryLook.
// The hardest nulls for a bet on "above" put their mass at the floor and
// far out (two-point 0 or 10 bounds; a lognormal of heavy tail); a
// symmetric null about the bound checks the rule and the bet together
// (the t mixture assumes a symmetric spread).
func TestTheFloorBetHoldsItsLevelAtEveryLook(t *testing.T) {
	const sequences, looks, alpha, limit, bound = 2000, 30, 0.05, 129, 100.0
	type null struct {
		draw func(r *rand.Rand) float64
		both bool
	}
	nulls := map[string]null{
		"two-point 0 or 10 bounds": {func(r *rand.Rand) float64 {
			if r.Float64() < 0.1 {
				return 10 * bound
			}
			return 0
		}, false},
		"exponential, mean at the bound": {func(r *rand.Rand) float64 { return bound * r.ExpFloat64() }, false},
		// exp(N(μ, 1.5²)) has mean exp(μ + 1.125): μ = ln(bound) − 1.125.
		"lognormal, mean at the bound": {func(r *rand.Rand) float64 {
			return math.Exp(math.Log(bound) - 1.125 + 1.5*r.NormFloat64())
		}, false},
		"exponential, mean half the bound": {func(r *rand.Rand) float64 { return bound / 2 * r.ExpFloat64() }, false},
		"uniform 0..2 bounds":              {func(r *rand.Rand) float64 { return 2 * bound * r.Float64() }, true},
	}
	c := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "m", Op: "<=", Bound: bound}, Range: []float64{0}}
	for name, nl := range nulls {
		r := rand.New(rand.NewPCG(19, 23))
		count := 0
		for range sequences {
			var d []float64
			var e Evidence
			for n := 1; n <= looks; n++ {
				d = append(d, nl.draw(r)-bound)
				le := floorBetLogE(d, 0, bound)
				if nl.both {
					le = c.LogE(TMixture, d)
				}
				e.observe(le, d)
				if e.Decided(alpha, 1) {
					count++
					break
				}
			}
		}
		t.Logf("%s: %d of %d sequences crossed", name, count, sequences)
		if count > limit {
			t.Errorf("the floor bet under a %s null: %d of %d sequences rejected at some look, above %d for alpha = %v", name, count, sequences, limit, alpha)
		}
	}
}
