package explore

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tlab/internal/advise"
)

// A requirement decided by its floor, at equality exactly: every value at
// or above the floor f fails "<= b" only where f > b (at f = b a value
// may equal the bound and meet), "< b" where f >= b; it meets ">= b"
// where f >= b and "> b" where f > b. No floor (NaN), no decision.
func TestARequirementDecidedByItsFloor(t *testing.T) {
	cases := []struct {
		op    string
		floor float64
		want  string
	}{
		{"<=", 100.001, string(advise.Fails)},
		{"<=", 100, ""},
		{"<=", 99, ""},
		{"<", 100, string(advise.Fails)},
		{"<", 99.999, ""},
		{">=", 100, string(advise.Meets)},
		{">=", 99.999, ""},
		{">", 100, ""},
		{">", 100.001, string(advise.Meets)},
		{"<=", math.NaN(), ""},
	}
	for _, c := range cases {
		comp := Comparison{Kind: RequirementKind, Stack: "x", Requirement: advise.Requirement{Metric: "m", Op: c.op, Bound: 100}}
		if got := comp.byFloor(c.floor); got != c.want {
			t.Errorf("m %s 100 with floor %v: %q, want %q", c.op, c.floor, got, c.want)
		}
	}
	pair := Comparison{Kind: PairKind, A: "a", B: "b", Requirement: advise.Requirement{Metric: "m", Op: "<=", Bound: 100}}
	if got := pair.byFloor(500); got != "" {
		t.Errorf("a pair decided by a floor: %q", got)
	}
}

// floorLab's floor is the explored RTT (the second parameter), as a
// request-response workload's is on a link without jitter: a delay of
// at least one round trip.
func floorLab(p Point, _, metric string) (float64, bool) {
	if metric != "delay_p99_ms" {
		return 0, false
	}
	return p.Values[1], true
}

// A map with floors: delay_p99_ms <= 30 over loss 0..4 % x RTT 5..45 ms,
// where each stack's delay is the RTT plus a few ms. At RTT 35 and 45 ms
// the floor (the RTT) is above the bound: both stacks fail there by
// construction, the best is none, and the search measures none of those
// ten points, in the monotone search and in the coarse grid's alike (its
// 45 ms row is settled before any repetition). The answer says so.
func TestAMapDecidesByTheFloorWithoutMeasuring(t *testing.T) {
	for _, monotone := range []bool{true, false} {
		lab := &fakeLab{seed: 3, shared: 1, own: 1, delay: func(st string, x []float64) float64 {
			if st == "tcp" {
				return x[1] + 8
			}
			return x[1] + 3
		}}
		var measured []Point
		cfg := Config{Params: []Param{{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}, {Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}},
			Stacks: []string{"quic", "tcp"}, Require: require(30), Coarse: 2, MaxReps: 6, Floor: floorLab,
			Round: func(_ int, reqs []Request) {
				for _, r := range reqs {
					measured = append(measured, r.Point)
				}
			}}
		if monotone {
			cfg.Monotone = []int{1, 1}
		}
		m, err := Run(context.Background(), cfg, lab)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range measured {
			if p.Values[1] > 30 {
				t.Errorf("monotone %v: measured %s, where the floor %v ms > 30 ms decides every status", monotone, p.Label(), p.Values[1])
			}
		}
		for _, p := range m.Points {
			if p.Values[1] <= 30 {
				continue
			}
			if len(p.Reps) != 0 || !p.Settled || p.Best != "" {
				t.Errorf("monotone %v: %s: %d repetitions, settled %v, best %q; want 0, true, none", monotone, p.Label(), len(p.Reps), p.Settled, p.Best)
			}
			for i, c := range m.Comparisons {
				if c.Kind == RequirementKind && (p.Verdicts[i].Label != string(advise.Fails) || p.Verdicts[i].P != 0) {
					t.Errorf("monotone %v: %s: %s is %s (p %v), want fails by the floor", monotone, p.Label(), c.Name(), p.Verdicts[i].Label, p.Verdicts[i].P)
				}
			}
		}
		byFloor := 0
		for _, lp := range m.Lattice {
			for k, how := range lp.How {
				switch {
				case lp.Values[1] > 30 && (how != HowFloor || lp.Status[k] != string(advise.Fails) || lp.Floor[k] != lp.Values[1]):
					t.Errorf("%s %s: %s by %q (floor %v), want fails by the floor %v", lp.Label(), cfg.Stacks[k], lp.Status[k], how, lp.Floor[k], lp.Values[1])
				case lp.Values[1] <= 30 && how == HowFloor:
					t.Errorf("%s %s: decided by the floor %v <= 30", lp.Label(), cfg.Stacks[k], lp.Floor[k])
				case how == HowFloor:
					byFloor++
				}
			}
			if lp.Values[1] > 30 && lp.Best != None {
				t.Errorf("%s: best %q, want none (both fail by the floor)", lp.Label(), lp.Best)
			}
		}
		if monotone && byFloor != 20 {
			t.Errorf("%d statuses by the floor, want 20 (10 points x 2 stacks)", byFloor)
		}
		if want := "Decided by construction"; !strings.Contains(m.Answer(), want) {
			t.Errorf("monotone %v: the answer does not say %q:\n%s", monotone, want, m.Answer())
		}
		t.Logf("monotone %v: %d points, %d cells", monotone, len(m.Points), m.Cells)
	}
}

// The floor bet with a floor f under the bound b stakes up to 1/(b − f).
// By hand, two repetitions of 130 ms against 100 ms: with the floor 90,
// λ = (k/11)/10 and each factor is 1 + 3k/11: Σ_k (1 + 3k/11)² = 10 +
// 6·55/11 + 9·385/121 = 68.636364, a mean of 6.8636364; with the floor
// 0, λ = (k/11)/100 and each factor is 1 + 0.3k/11: 10 + 3 + 0.09·385/121
// = 13.286364, a mean of 1.3286364. The comparison takes the point's
// floor (withFloor) and joins the t mixture's 3 (no spread, n = 2):
// (3 + 6.8636364)/2 = 4.9318182.
func TestTheFloorBetGrowsFasterWithAFloor(t *testing.T) {
	d := []float64{30, 30}
	if got := math.Exp(floorBetLogE(d, 90, 100)); !(math.Abs(got-6.8636364) <= 1e-6) {
		t.Errorf("floor 90: %v, want 6.8636364", got)
	}
	if got := math.Exp(floorBetLogE(d, 0, 100)); !(math.Abs(got-1.3286364) <= 1e-6) {
		t.Errorf("floor 0: %v, want 1.3286364", got)
	}
	c := Comparisons([]string{"x"}, []advise.Requirement{{Metric: "delay_p95_ms", Op: "<=", Bound: 100}})[0]
	if got := math.Exp(c.withFloor(90).LogE(TMixture, d)); !(math.Abs(got-4.9318182) <= 1e-6) {
		t.Errorf("the comparison with the point's floor 90: %v, want 4.9318182", got)
	}
	if got := c.withFloor(math.NaN()); len(got.Range) != 1 || got.Range[0] != 0 {
		t.Errorf("no floor changed the range to %v", got.Range)
	}
	if got := c.withFloor(-5); got.Range[0] != 0 {
		t.Errorf("a floor below the metric's own least value lowered it to %v", got.Range[0])
	}
}

// Under nulls whose values lie at or above the floor f = 80 with their
// mean at the bound 100 (or below it), the bet staking up to 1/(b − f) =
// 1/20 still rejects no more often than alpha, looking after every
// repetition: 129 of 2000 sequences at alpha = 0.05 (Ville's inequality,
// Binomial(2000, 0.05) + 3 sd). The hardest null puts its mass at the
// floor and far out: 80 with chance 0.9, 280 with 0.1 (mean 72 + 28 =
// 100); with the floor's stakes the two-point null's factors are 1 − c
// and 1 + 9c, whose expected log is negative for every c ≤ 10/11. A
// stake beyond 1/(b − f) would make a factor at the floor negative (the
// e-value NaN), which the test refuses.
func TestTheFloorBetWithAFloorHoldsItsLevelAtEveryLook(t *testing.T) {
	const sequences, looks, alpha, limit, bound, floor = 2000, 30, 0.05, 129, 100.0, 80.0
	type null struct {
		draw func(r *rand.Rand) float64
		both bool
	}
	nulls := map[string]null{
		"two-point 80 or 280": {func(r *rand.Rand) float64 {
			if r.Float64() < 0.1 {
				return 280
			}
			return 80
		}, false},
		"80 plus an exponential of mean 20": {func(r *rand.Rand) float64 { return floor + 20*r.ExpFloat64() }, false},
		"80 plus an exponential of mean 10": {func(r *rand.Rand) float64 { return floor + 10*r.ExpFloat64() }, false},
		"uniform 80..120":                   {func(r *rand.Rand) float64 { return floor + 40*r.Float64() }, true},
	}
	c := Comparisons([]string{"x"}, []advise.Requirement{{Metric: "delay_p95_ms", Op: "<=", Bound: bound}})[0].withFloor(floor)
	for name, nl := range nulls {
		r := rand.New(rand.NewPCG(29, 31))
		count := 0
		for range sequences {
			var d []float64
			var e Evidence
			for n := 1; n <= looks; n++ {
				d = append(d, nl.draw(r)-bound)
				le := floorBetLogE(d, c.Range[0], bound)
				if nl.both {
					le = c.LogE(TMixture, d)
				}
				if math.IsNaN(le) {
					// A capital with a negative factor: a stake beyond
					// 1/(b − f) at a value at the floor.
					t.Fatalf("%s: the e-value is NaN at %v", name, d)
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
			t.Errorf("the floor bet with floor %v under a %s null: %d of %d sequences rejected at some look, above %d for alpha = %v", floor, name, count, sequences, limit, alpha)
		}
	}
}

// A floor's status carries along a monotone parameter as a measured one
// does. Interval 10..50 ms (no direction) x jitter 0..12 ms (worse
// upward), delay_p99_ms <= 30: the lab proves a floor only at (10 ms, no
// jitter), 40 ms, so both stacks fail there by construction; more jitter
// at the same interval is at least as bad, so both fail at (10, 3), (10,
// 6), (10, 9) and (10, 12) by inference, 8 statuses, measured or not,
// and the best there is none. (Before floors were sources of the
// inference, those four points stayed open until measured.)
func TestAFloorsStatusCarriesAlongAMonotoneParameter(t *testing.T) {
	lab := &fakeLab{seed: 5, shared: 1, own: 1, delay: func(st string, x []float64) float64 { return 10 + x[1] }}
	floor := func(p Point, _, metric string) (float64, bool) {
		if metric == "delay_p99_ms" && p.Values[0] == 10 && p.Values[1] == 0 {
			return 40, true
		}
		return 0, false
	}
	cfg := Config{Params: []Param{{Path: "workload.interval", Low: 10, High: 50, Unit: "ms", Resolution: 10}, {Path: "link.jitter", Low: 0, High: 12, Unit: "ms", Resolution: 3}},
		Stacks: []string{"quic", "tcp"}, Require: require(30), Coarse: 2, MaxReps: 4, Budget: Budget{Cells: 16}, Floor: floor, Monotone: []int{0, 1}}
	m, err := Run(context.Background(), cfg, lab)
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, lp := range m.Lattice {
		if lp.Values[0] != 10 || lp.Values[1] == 0 {
			continue
		}
		for k, st := range lp.Status {
			if st != string(advise.Fails) {
				t.Errorf("%s %s: %s (%q), want fails, carried from the floor at no jitter", lp.Label(), cfg.Stacks[k], st, lp.How[k])
				continue
			}
			carried++
		}
		if lp.Best != None {
			t.Errorf("%s: best %q, want none", lp.Label(), lp.Best)
		}
	}
	if carried != 8 {
		t.Errorf("%d statuses carried along the 10 ms interval, want 8 (4 points x 2 stacks)", carried)
	}
}
