package emu

import (
	"math"
	"math/bits"
)

// SojournHistogram counts a queue's sojourn times (the wait before a
// packet's transmission starts) in buckets that split each octave from
// 1 us to about 16 s into four equal parts (a bucket is at most a quarter
// of its lower edge wide): a fixed array, copied with the counters, that
// costs a packet one increment. Bucket 0 holds waits under 1 us (a queue
// that was empty); the last, everything longer. A percentile read at a
// bucket's middle is within 12.5 % of the true value.
type SojournHistogram [SojournBuckets]uint64

// SojournBuckets is the histogram's size: under 1 us, 24 octaves of four,
// and the overflow.
const SojournBuckets = 1 + 24*4 + 1

// sojournBucket is the bucket of a wait of ns nanoseconds.
func sojournBucket(ns int64) int {
	v := uint64(max(ns, 0))
	if v < 1000 {
		return 0
	}
	octave := bits.Len64(v/1000) - 1 // v in [1000·2^octave, 1000·2^(octave+1))
	if octave >= 24 {
		return SojournBuckets - 1
	}
	low := uint64(1000) << octave
	quarter := int((v - low) * 4 / low)
	return 1 + octave*4 + quarter
}

// sojournLow is the lower edge of bucket b, in nanoseconds.
func sojournLow(b int) float64 {
	if b == 0 {
		return 0
	}
	octave, quarter := (b-1)/4, (b-1)%4
	return 1000 * math.Ldexp(1+float64(quarter)/4, octave)
}

// Add counts one wait.
func (h *SojournHistogram) Add(ns int64) { h[sojournBucket(ns)]++ }

// Sub is h less an earlier snapshot of the same counters.
func (h SojournHistogram) Sub(o SojournHistogram) SojournHistogram {
	for i := range h {
		h[i] -= o[i]
	}
	return h
}

// N is how many waits it counted.
func (h SojournHistogram) N() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the q-quantile of the waits in milliseconds: the middle of
// its bucket (0 for the first); NaN when nothing was counted.
func (h SojournHistogram) Quantile(q float64) float64 {
	n := h.N()
	if n == 0 {
		return math.NaN()
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var seen uint64
	for b, c := range h {
		seen += c
		if seen >= rank {
			if b == 0 {
				return 0
			}
			if b == SojournBuckets-1 {
				return sojournLow(b) / 1e6
			}
			return (sojournLow(b) + sojournLow(b+1)) / 2 / 1e6
		}
	}
	return sojournLow(SojournBuckets-1) / 1e6
}
