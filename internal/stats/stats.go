// Package stats turns a sweep into decisions: for each pair of protocols
// on the same network and parameters, which is faster (or lighter), by how
// much, with what certainty, or "no significant difference". It compares
// samples with the Mann-Whitney U test (go-moremath), the median
// difference with a seeded bootstrap interval, the Hodges-Lehmann shift and
// Cliff's delta, and corrects the p-values of the whole sweep with Holm's
// method.
package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	mstats "github.com/aclements/go-moremath/stats"

	"tlab/internal/metrics"
)

// Comparison is protocol B against protocol A on one network and set of
// swept values, for one metric. Its JSON names are stable
// (docs/metrics.md).
type Comparison struct {
	Profile string `json:"profile"`
	Params  string `json:"params"`
	Metric  string `json:"metric"`
	A       string `json:"a"`
	B       string `json:"b"`
	// Unit is what one sample is: "repetition" (a cell's value; the
	// sampling unit whenever a cell is repeated) or "request" (the
	// records of one cell each: consecutive requests share the link's
	// state, so p-values are optimistic).
	Unit    string  `json:"sampling_unit"`
	NA      int     `json:"n_a"`
	NB      int     `json:"n_b"`
	MedianA float64 `json:"median_a"`
	MedianB float64 `json:"median_b"`
	// Diff is MedianB − MedianA, with a 95 % bootstrap interval.
	Diff       float64 `json:"median_diff"`
	DiffLow    float64 `json:"median_diff_ci_low"`
	DiffHigh   float64 `json:"median_diff_ci_high"`
	HodgesLeh  float64 `json:"hodges_lehmann"`
	CliffDelta float64 `json:"cliffs_delta"`
	U          float64 `json:"mann_whitney_u"`
	P          float64 `json:"p_value"`
	PHolm      float64 `json:"p_holm"`
	// Ratio is mean B over mean A, with a 95 % bootstrap interval from
	// the same resamples: for completion_ms, study D's ξ = T_B / T_A
	// (below 1: B faster).
	Ratio     float64 `json:"mean_ratio"`
	RatioLow  float64 `json:"mean_ratio_ci_low"`
	RatioHigh float64 `json:"mean_ratio_ci_high"`
	// Verdict says which is smaller (faster, lighter) by how much, or
	// "no significant difference".
	Verdict string `json:"verdict"`
	// Quantile is the statistic compared: 0.5, the median, unless the
	// comparison is of a tail (CompareQuantile); median_a, median_b and
	// median_diff then hold that quantile.
	Quantile float64 `json:"quantile"`
}

// Alpha is the significance level after Holm's correction.
const Alpha = 0.05

// Bootstraps is the number of bootstrap resamples.
const Bootstraps = 2000

// MaxPerSample bounds a sample (a seeded random subset is kept): the tests
// gain nothing from more, and the pairwise Hodges-Lehmann shift costs
// n_a × n_b.
const MaxPerSample = 2000

// Compare compares samples a and b (any order), seeded.
func Compare(a, b []float64, seed uint64) Comparison {
	r := rand.New(rand.NewPCG(seed, 0x73746174))
	a, b = subsample(a, r), subsample(b, r)
	c := Comparison{NA: len(a), NB: len(b), MedianA: metrics.QuantileOf(a, 0.5), MedianB: metrics.QuantileOf(b, 0.5), Quantile: 0.5}
	c.Diff = sub(c.MedianB, c.MedianA)
	c.Ratio = mean(b) / mean(a)
	c.DiffLow, c.DiffHigh, c.HodgesLeh, c.CliffDelta, c.U, c.P, c.PHolm = nan, nan, nan, nan, nan, nan, nan
	c.RatioLow, c.RatioHigh = nan, nan
	if len(a) < 2 || len(b) < 2 {
		return c
	}
	diffs := make([]float64, Bootstraps)
	ratios := make([]float64, Bootstraps)
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	for i := range diffs {
		for j := range ra {
			ra[j] = a[r.IntN(len(a))]
		}
		for j := range rb {
			rb[j] = b[r.IntN(len(b))]
		}
		diffs[i] = sub(metrics.QuantileOf(rb, 0.5), metrics.QuantileOf(ra, 0.5))
		ratios[i] = mean(rb) / mean(ra)
	}
	slices.Sort(diffs)
	c.DiffLow, c.DiffHigh = metrics.Quantile(diffs, 0.025), metrics.Quantile(diffs, 0.975)
	slices.Sort(ratios)
	c.RatioLow, c.RatioHigh = metrics.Quantile(ratios, 0.025), metrics.Quantile(ratios, 0.975)
	pair := make([]float64, 0, len(a)*len(b))
	greater, less := 0, 0
	for _, x := range a {
		for _, y := range b {
			pair = append(pair, sub(y, x))
			switch {
			case y > x:
				greater++
			case y < x:
				less++
			}
		}
	}
	c.HodgesLeh = metrics.QuantileOf(pair, 0.5)
	c.CliffDelta = float64(greater-less) / float64(len(a)*len(b))
	if res, err := mstats.MannWhitneyUTest(b, a, mstats.LocationDiffers); err == nil {
		c.U, c.P = res.U, res.P
	}
	return c
}

// CompareQuantile compares the q-quantile of samples a and b (a tail:
// q = 0.99), seeded: the difference B − A with a 95 % percentile-bootstrap
// interval, and a bootstrap p-value (twice the smaller share of resampled
// differences on either side of zero, a tie counting half on each) for
// Holm and Judge. The rank tests
// and effect sizes are the median's and are left out.
func CompareQuantile(a, b []float64, q float64, seed uint64) Comparison {
	r := rand.New(rand.NewPCG(seed, 0x7461696c))
	a, b = subsample(a, r), subsample(b, r)
	c := Comparison{NA: len(a), NB: len(b), MedianA: metrics.QuantileOf(a, q), MedianB: metrics.QuantileOf(b, q), Quantile: q}
	c.Diff = sub(c.MedianB, c.MedianA)
	c.DiffLow, c.DiffHigh, c.HodgesLeh, c.CliffDelta, c.U, c.P, c.PHolm = nan, nan, nan, nan, nan, nan, nan
	c.Ratio, c.RatioLow, c.RatioHigh = nan, nan, nan
	if len(a) < 2 || len(b) < 2 {
		return c
	}
	diffs := make([]float64, Bootstraps)
	sa, sb := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	ca, cb := make([]int32, len(a)), make([]int32, len(b))
	// Ties count half on each side (a mid-p): a tail's quantile often
	// lands on the same value in both resamples.
	below, above := 0.0, 0.0
	for i := range diffs {
		diffs[i] = sub(resampledQuantile(sb, cb, q, r), resampledQuantile(sa, ca, q, r))
		switch {
		case diffs[i] < 0:
			below++
		case diffs[i] > 0:
			above++
		default:
			below, above = below+0.5, above+0.5
		}
	}
	slices.Sort(diffs)
	c.DiffLow, c.DiffHigh = metrics.Quantile(diffs, 0.025), metrics.Quantile(diffs, 0.975)
	c.P = math.Min(1, 2*min(below, above)/Bootstraps)
	return c
}

// resampledQuantile is the q-quantile (as metrics.Quantile defines it) of
// a resample with replacement of sorted, in O(n): it counts how often each
// value is drawn (counts is scratch of sorted's length) and walks the
// counts to the two order statistics the quantile lies between.
func resampledQuantile(sorted []float64, counts []int32, q float64, r *rand.Rand) float64 {
	n := len(sorted)
	clear(counts)
	for range n {
		counts[r.IntN(n)]++
	}
	h := float64(n-1) * q
	k := int(math.Floor(h))
	frac := h - float64(k)
	// The k-th and (k+1)-th order statistics (from 0) of the resample.
	lo, hi := math.NaN(), math.NaN()
	seen := 0
	for i, c := range counts {
		if c == 0 {
			continue
		}
		next := seen + int(c)
		if math.IsNaN(lo) && k < next {
			lo = sorted[i]
		}
		if k+1 < next {
			hi = sorted[i]
			break
		}
		seen = next
	}
	switch {
	case math.IsNaN(hi) || frac == 0:
		return lo
	case math.IsInf(hi, 1):
		return hi
	}
	return lo + frac*(hi-lo)
}

var nan = math.NaN()

// sub is y − x where a delay may be +Inf (a request that never came
// back): two such are equal, a difference of 0, not Inf − Inf's NaN.
func sub(y, x float64) float64 {
	if y == x {
		return 0
	}
	return y - x
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return nan
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

func subsample(v []float64, r *rand.Rand) []float64 {
	if len(v) <= MaxPerSample {
		return v
	}
	s := slices.Clone(v)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s[:MaxPerSample]
}

// Holm adjusts the p-values of every comparison together (Holm 1979): the
// k-th smallest of m is multiplied by m−k+1, made monotone, capped at 1.
// NaN p-values (too few samples) stay NaN and do not count.
func Holm(cs []Comparison) {
	var idx []int
	for i, c := range cs {
		if math.IsNaN(c.P) {
			cs[i].PHolm = math.NaN()
			continue
		}
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(x, y int) bool { return cs[idx[x]].P < cs[idx[y]].P })
	m := len(idx)
	prev := 0.0
	for k, i := range idx {
		adj := math.Min(1, cs[i].P*float64(m-k))
		adj = math.Max(adj, prev)
		cs[i].PHolm, prev = adj, adj
	}
}

// Judge writes each comparison's verdict: B or A smaller by the median
// difference, with its interval, when the Holm-corrected p-value is under
// Alpha and the interval excludes zero; otherwise no significant
// difference.
func Judge(cs []Comparison, unit string) {
	for i := range cs {
		c := &cs[i]
		switch {
		case math.IsNaN(c.PHolm):
			c.Verdict = "too few samples to test"
		case c.Significant():
			winner, loser := c.B, c.A
			if c.Diff > 0 {
				winner, loser = c.A, c.B
			}
			c.Verdict = fmt.Sprintf("%s lower than %s by %.3g %s (95 %% CI %.3g to %.3g)", winner, loser, math.Abs(c.Diff), unit, math.Min(math.Abs(c.DiffLow), math.Abs(c.DiffHigh)), math.Max(math.Abs(c.DiffLow), math.Abs(c.DiffHigh)))
		default:
			c.Verdict = "no significant difference"
		}
	}
}

// MeanInterval is Student's t interval of the mean of v at the given
// confidence: mean ± t(1−α/2, n−1)·s/√n. It is what repetitions (a
// handful of cells, each value itself an average or a percentile of many
// requests) can give with its stated coverage: a percentile bootstrap of
// 3 values is about their min and max, which covers the mean some 75 %
// of the time. NaN for fewer than two values; ±Inf when a value is.
func MeanInterval(v []float64, confidence float64) (low, high float64) {
	n := len(v)
	if n < 2 {
		return nan, nan
	}
	m := mean(v)
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, m
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	se := math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	t := mstats.InvCDF(mstats.TDist{V: float64(n - 1)})(1 - (1-confidence)/2)
	return m - t*se, m + t*se
}

// Significant tells whether the comparison called a difference.
func (c Comparison) Significant() bool {
	return c.PHolm < Alpha && (c.DiffHigh < 0 || c.DiffLow > 0)
}

// MinP is the smallest two-sided p-value an exact Mann-Whitney test can
// give for samples of na and nb values without ties, 2 / C(na+nb, na): with
// 3 repetitions against 3 it is 0.1, so no difference can be called
// whatever the data.
func MinP(na, nb int) float64 {
	if na < 1 || nb < 1 {
		return 1
	}
	c := 1.0
	for i := 1; i <= nb; i++ {
		c = c * float64(na+i) / float64(i)
	}
	return math.Min(1, 2/c)
}
