package emu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"tlab/internal/units"
)

func drawJitter(t *testing.T, d DirectionConfig, n int, seed uint64) []float64 {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	m := newJitterModel(d, rand.New(rand.NewPCG(seed, 1)))
	out := make([]float64, n)
	for i := range out {
		out[i] = m.Sample(int64(i)*int64(time.Millisecond)) / 1e6 // ms, a packet a millisecond
	}
	return out
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

// ranks returns each value's rank (ties are not expected of continuous
// draws).
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(math.Copysign(1, v[a]-v[b])) })
	r := make([]float64, len(v))
	for rank, i := range idx {
		r[i] = float64(rank)
	}
	return r
}

// lag1 is the Pearson correlation of consecutive values.
func lag1(v []float64) float64 {
	a, b := v[:len(v)-1], v[1:]
	ma, sa := meanSD(a)
	mb, sb := meanSD(b)
	var c float64
	for i := range a {
		c += (a[i] - ma) * (b[i] - mb)
	}
	return c / float64(len(a)-1) / (sa * sb)
}

// TestLogNormalJitter: exp of a standard normal, centred and scaled to
// the configured standard deviation: mean 0, standard deviation 2 ms, and
// at the p99 (e^2.3263 − e^0.5)/√((e−1)e) = 3.974 standard deviations,
// against a normal's 2.326; never below −e^0.5/√((e−1)e) = −0.763.
func TestLogNormalJitter(t *testing.T) {
	const n = 400000
	v := drawJitter(t, DirectionConfig{Jitter: units.Duration(2 * time.Millisecond), JitterDist: DistLogNormal}, n, 3)
	mean, sd := meanSD(v)
	// The standard error of the mean is sd/√n = 0.003 ms; of the sd,
	// for this heavy a tail, about 0.02 ms.
	if !(math.Abs(mean) > 0.02 || math.Abs(sd-2) <= 0.1) {
		t.Errorf("mean %.4f ms, sd %.4f ms; want 0 and 2", mean, sd)
	}
	slices.Sort(v)
	if p99 := v[n*99/100]; !(math.Abs(p99-2*3.974) <= 0.15) {
		t.Errorf("p99 %.3f ms, want %.3f", p99, 2*3.974)
	}
	if v[0] < -2*0.7631 {
		t.Errorf("a deviation of %.3f ms, below the law's floor %.3f", v[0], -2*0.7631)
	}
}

// TestCorrelatedJitter: with jitter_correlation ρ a normal jitter's
// consecutive samples correlate by ρ, and any other law's by the Gaussian
// copula's Spearman correlation (6/π)·asin(ρ/2) in rank, while its
// distribution stays as without correlation (the shifted Pareto's median
// 2^(1/3) − 1.5 = −0.2401 of scale); the same seed gives the same series;
// without correlation, consecutive samples are independent.
func TestCorrelatedJitter(t *testing.T) {
	const n, rho = 200000, 0.8
	ms := units.Duration(time.Millisecond)
	normal := drawJitter(t, DirectionConfig{Jitter: ms, JitterDist: DistNormal, JitterCorrelation: rho}, n, 5)
	// The sampling error of a lag-1 correlation of an AR(1) series is
	// about √((1−ρ²)/n)·… < 0.005 here.
	if r := lag1(normal); !(math.Abs(r-rho) <= 0.01) {
		t.Errorf("normal, correlation 0.8: lag-1 correlation %.4f", r)
	}
	if _, sd := meanSD(normal); !(math.Abs(sd-1) <= 0.03) {
		t.Errorf("normal, correlation 0.8: sd %.4f ms, want 1", sd)
	}
	pareto := drawJitter(t, DirectionConfig{Jitter: ms, JitterDist: DistPareto, JitterCorrelation: rho}, n, 5)
	want := 6 / math.Pi * math.Asin(rho/2)
	if r := lag1(ranks(pareto)); !(math.Abs(r-want) <= 0.01) {
		t.Errorf("pareto, correlation 0.8: Spearman lag-1 %.4f, want %.4f", r, want)
	}
	sorted := slices.Sorted(slices.Values(pareto))
	if med := sorted[n/2]; !(math.Abs(med-(math.Cbrt(2)-1.5)) <= 0.01) {
		t.Errorf("pareto, correlation 0.8: median %.4f ms, want %.4f", med, math.Cbrt(2)-1.5)
	}
	again := drawJitter(t, DirectionConfig{Jitter: ms, JitterDist: DistPareto, JitterCorrelation: rho}, 1000, 5)
	if !slices.Equal(again, pareto[:1000]) {
		t.Error("the same seed gave another series")
	}
	free := drawJitter(t, DirectionConfig{Jitter: ms, JitterDist: DistNormal}, n, 5)
	if r := lag1(free); !(math.Abs(r) <= 0.01) {
		t.Errorf("uncorrelated jitter: lag-1 correlation %.4f", r)
	}
	for _, bad := range []DirectionConfig{{Jitter: ms, JitterCorrelation: 1}, {Jitter: ms, JitterCorrelation: -0.1}, {JitterCorrelation: 0.5}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// TestJitterCoherenceIsATimeConstant: with jitter_coherence τ the latent
// normal is an Ornstein–Uhlenbeck process, so two packets Δt apart
// correlate by exp(−Δt/τ) whatever the packet rate: with τ = 5 ms, 0.8187
// at 1 ms and 0.3679 at 5 ms; packets at the same instant share their
// jitter; the spread stays the configured one.
func TestJitterCoherenceIsATimeConstant(t *testing.T) {
	const n = 200000
	cfg := DirectionConfig{Jitter: units.Duration(time.Millisecond), JitterDist: DistNormal, JitterCoherence: units.Duration(5 * time.Millisecond)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, gap := range []time.Duration{time.Millisecond, 5 * time.Millisecond} {
		m := newJitterModel(cfg, rand.New(rand.NewPCG(7, 1)))
		v := make([]float64, n)
		for i := range v {
			v[i] = m.Sample(int64(i)*int64(gap)) / 1e6
		}
		want := math.Exp(-float64(gap) / float64(5*time.Millisecond))
		if r := lag1(v); !(math.Abs(r-want) <= 0.01) {
			t.Errorf("packets %v apart: lag-1 correlation %.4f, want exp(−Δt/τ) = %.4f", gap, r, want)
		}
		if _, sd := meanSD(v); !(math.Abs(sd-1) <= 0.03) {
			t.Errorf("packets %v apart: sd %.4f ms, want 1", gap, sd)
		}
	}
	m := newJitterModel(cfg, rand.New(rand.NewPCG(7, 1)))
	if a, b := m.Sample(1e6), m.Sample(1e6); a != b {
		t.Errorf("two packets at one instant: jitter %.0f and %.0f ns", a, b)
	}
	for _, bad := range []DirectionConfig{
		{Jitter: units.Duration(time.Millisecond), JitterCorrelation: 0.5, JitterCoherence: units.Duration(time.Millisecond)},
		{JitterCoherence: units.Duration(time.Millisecond)},
		{Jitter: units.Duration(time.Millisecond), JitterCoherence: -1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
