package emu

import "math"

// Histogram counts durations in 1-microsecond buckets up to HistogramMaxUs,
// with one overflow bucket and the exact maximum. It is the emulator's record
// of its own timing error; fixed buckets keep the hot path allocation-free.
type Histogram struct {
	Counts   []uint64 `json:"-"`
	Overflow uint64   `json:"overflow"`
	N        uint64   `json:"n"`
	MaxNs    int64    `json:"max_ns"`
	SumNs    float64  `json:"sum_ns"`
}

// HistogramMaxUs is the largest duration with a bucket of its own.
const HistogramMaxUs = 20000

func NewHistogram() *Histogram { return &Histogram{Counts: make([]uint64, HistogramMaxUs)} }

// Add records one duration; negative values count as zero.
func (h *Histogram) Add(ns int64) {
	ns = max(ns, 0)
	h.N++
	h.SumNs += float64(ns)
	h.MaxNs = max(h.MaxNs, ns)
	if us := ns / 1000; us < HistogramMaxUs {
		h.Counts[us]++
	} else {
		h.Overflow++
	}
}

// Reset forgets every sample.
func (h *Histogram) Reset() {
	clear(h.Counts)
	h.Overflow, h.N, h.MaxNs, h.SumNs = 0, 0, 0, 0
}

// Quantile returns the q-quantile in nanoseconds, resolved to the middle of
// its 1 us bucket (the maximum if it falls in the overflow bucket).
func (h *Histogram) Quantile(q float64) float64 {
	if h.N == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.N)))
	rank = max(rank, 1)
	var seen uint64
	for us, c := range h.Counts {
		seen += c
		if seen >= rank {
			return math.Min(float64(us)*1000+500, float64(h.MaxNs))
		}
	}
	return float64(h.MaxNs)
}

// LatencySummary is a histogram's quantiles in microseconds.
type LatencySummary struct {
	N    uint64  `json:"n"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
	Mean float64 `json:"mean_us"`
}

func (h *Histogram) Summary() LatencySummary {
	if h.N == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		N: h.N, P50: h.Quantile(0.5) / 1e3, P90: h.Quantile(0.9) / 1e3, P99: h.Quantile(0.99) / 1e3,
		P999: h.Quantile(0.999) / 1e3, Max: float64(h.MaxNs) / 1e3, Mean: h.SumNs / float64(h.N) / 1e3,
	}
}
