// Package metrics turns records into the statistics the studies define:
// delay percentiles, jitter after RFC 4689, data volume per message,
// connections per 1000 requests, and study B's outlier rule.
package metrics

import (
	"math"
	"slices"
)

// Quantile returns the q-quantile of sorted values with linear
// interpolation between order statistics (Hyndman and Fan's type 7, the
// default of numpy, pandas and R), so that tlab's figures match what users
// compute from the records themselves.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := (float64(n) - 1) * q
	lo := math.Floor(h)
	i := int(lo)
	frac := h - lo
	switch {
	case i >= n-1 || frac == 0:
		return sorted[i]
	case math.IsInf(sorted[i], -1) && math.IsInf(sorted[i+1], 1):
		// Between −Inf and +Inf the interpolation has no limit.
		return math.NaN()
	case math.IsInf(sorted[i+1], 1):
		// Toward a message that never completed: beyond any bound (and
		// not Inf−Inf's NaN, nor 0×Inf's).
		return sorted[i+1]
	case math.IsInf(sorted[i], -1):
		// From −Inf (a difference of delays whose subtrahend never
		// completed): (1−frac)·x(k) + frac·x(k+1) tends to −Inf for any
		// frac < 1, not −Inf+Inf's NaN.
		return sorted[i]
	}
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// QuantileCounting is the q-quantile of the delays of all measured
// messages, unfinished of which never completed (failed, lost or never
// sent): for the application each of those is later than any delay, so
// it counts as +Inf. completed need not be sorted and is left as it is.
func QuantileCounting(completed []float64, unfinished int, q float64) float64 {
	return Quantile(sortedCounting(completed, unfinished), q)
}

// sortedCounting is a sorted copy of completed followed by +Inf for each
// of the unfinished messages: every measured message by its delay.
func sortedCounting(completed []float64, unfinished int) []float64 {
	s := make([]float64, 0, len(completed)+unfinished)
	s = append(s, completed...)
	slices.Sort(s)
	for range unfinished {
		s = append(s, math.Inf(1))
	}
	return s
}

// QuantileOf is Quantile of values in any order; values is left as it is.
func QuantileOf(values []float64, q float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	return Quantile(s, q)
}

// Distribution summarises a sample.
type Distribution struct {
	N    int     `json:"n"`
	P5   float64 `json:"p5"`
	P25  float64 `json:"p25"`
	P50  float64 `json:"p50"`
	P75  float64 `json:"p75"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	// Std is the sample standard deviation (n-1).
	Std float64 `json:"std"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Describe computes the distribution of values (NaN fields when empty).
func Describe(values []float64) Distribution {
	if len(values) == 0 {
		nan := math.NaN()
		return Distribution{P5: nan, P25: nan, P50: nan, P75: nan, P95: nan, P99: nan, Mean: nan, Std: nan, Min: nan, Max: nan}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	mean := 0.0
	for _, v := range s {
		mean += v
	}
	mean /= float64(len(s))
	ss := 0.0
	for _, v := range s {
		ss += (v - mean) * (v - mean)
	}
	std := math.NaN()
	if len(s) > 1 {
		std = math.Sqrt(ss / float64(len(s)-1))
	}
	return Distribution{
		N: len(s), P5: Quantile(s, 0.05), P25: Quantile(s, 0.25), P50: Quantile(s, 0.50),
		P75: Quantile(s, 0.75), P95: Quantile(s, 0.95), P99: Quantile(s, 0.99),
		Mean: mean, Std: std, Min: s[0], Max: s[len(s)-1],
	}
}

// Jitter is RFC 4689's jitter as study A uses it: the mean absolute
// difference between the delays of consecutive requests (in send order).
func Jitter(delaysInOrder []float64) float64 {
	if len(delaysInOrder) < 2 {
		return math.NaN()
	}
	sum := 0.0
	for i := 1; i < len(delaysInOrder); i++ {
		sum += math.Abs(delaysInOrder[i] - delaysInOrder[i-1])
	}
	return sum / float64(len(delaysInOrder)-1)
}

// madScale makes the median absolute deviation a consistent estimator of
// the standard deviation for normal data (1 / Φ⁻¹(3/4)).
const madScale = 1.482602218505602

// OutlierK is the outlier rule's k: study B's 3 scaled median absolute
// deviations (metrics.remove_outliers).
const OutlierK = 3

// Outliers returns the rule RemoveOutliers applies to values: whether a
// value is further than k scaled median absolute deviations from their
// median. records.csv's in_summary marks the delays it removed.
func Outliers(values []float64, k float64) func(float64) bool {
	if len(values) == 0 {
		return func(float64) bool { return false }
	}
	s := slices.Clone(values)
	slices.Sort(s)
	med := Quantile(s, 0.5)
	dev := make([]float64, len(s))
	for i, v := range s {
		dev[i] = math.Abs(v - med)
	}
	slices.Sort(dev)
	limit := k * madScale * Quantile(dev, 0.5)
	return func(v float64) bool { return math.Abs(v-med) > limit }
}

// RemoveOutliers drops values further than k scaled median absolute
// deviations from the median (study B's rule with k = 3, as MATLAB's
// isoutlier) and returns what is kept, in the original order, and how many
// were removed.
func RemoveOutliers(values []float64, k float64) (kept []float64, removed int) {
	if len(values) == 0 {
		return nil, 0
	}
	outlier := Outliers(values, k)
	for _, v := range values {
		if outlier(v) {
			removed++
			continue
		}
		kept = append(kept, v)
	}
	return kept, removed
}

// QuantileCI returns a distribution-free confidence interval of the
// q-quantile from sorted values: the order statistics X(j) ≤ ξ ≤ X(k),
// whose ranks come from the exact binomial distribution of how many
// values fall below the true quantile ξ (Binomial(n, q)), so that
// P(j ≤ B < k) ≥ confidence with each tail at most (1−confidence)/2. It
// assumes nothing of the values' distribution; the bounds are NaN when n
// is too small to bound the quantile from that side.
func QuantileCI(sorted []float64, q, confidence float64) (lo, hi float64) {
	n := len(sorted)
	lo, hi = math.NaN(), math.NaN()
	if n < 2 || q <= 0 || q >= 1 {
		return
	}
	tail := (1 - confidence) / 2
	// Walk the binomial CDF in log space (n may be large).
	logPMF := float64(n) * math.Log1p(-q)
	ratio := math.Log(q) - math.Log1p(-q)
	cdf := 0.0
	j, k := 0, 0
	for i := 0; i <= n; i++ {
		cdf += math.Exp(logPMF)
		if cdf <= tail {
			j = i + 1 // P(B ≤ j−1) ≤ tail
		}
		if cdf >= 1-tail {
			k = i + 1 // the smallest k with P(B ≥ k) ≤ tail
			break
		}
		logPMF += math.Log(float64(n-i)) - math.Log(float64(i+1)) + ratio
	}
	if j >= 1 {
		lo = sorted[j-1]
	}
	if k >= 1 && k <= n {
		hi = sorted[k-1]
	}
	return
}

// GoodputMbps is payload bytes × 8 over the time to the last byte, in
// Mbit/s (bulk's goodput_mbps, and the throughput a Quality of Outcome
// profile's minimum is held against); NaN when nothing completed.
func GoodputMbps(payloadBytes, lastMs float64) float64 {
	if lastMs <= 0 {
		return math.NaN()
	}
	return payloadBytes * 8 / lastMs / 1e3
}
