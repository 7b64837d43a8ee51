package emu

import (
	"math"
	"testing"
	"time"
)

// TestSojournBucketsHoldTheirWaits: every wait falls in the bucket whose
// edges hold it (each octave from 1 us split in four equal parts), the
// buckets grow by at most a quarter, and waits past 16 s land in the
// overflow.
func TestSojournBucketsHoldTheirWaits(t *testing.T) {
	for _, ns := range []int64{-5, 0, 999, 1000, 1189, 1190, 1500, 2000, 2999, 3000, 123456, 4_999_999, 80_000_000, int64(5 * time.Second), int64(16 * time.Second), int64(time.Hour)} {
		b := sojournBucket(ns)
		lo := sojournLow(b)
		if b < SojournBuckets-1 && !(float64(max(ns, 0)) >= lo-1000 && float64(ns) < sojournLow(b+1)) {
			t.Errorf("%d ns in bucket %d [%.0f, %.0f)", ns, b, lo, sojournLow(b+1))
		}
		if ns < 1000 && b != 0 {
			t.Errorf("%d ns: bucket %d, want 0 (under 1 us)", ns, b)
		}
	}
	if b := sojournBucket(int64(time.Hour)); b != SojournBuckets-1 {
		t.Errorf("an hour: bucket %d, want the overflow", b)
	}
	for b := 1; b < SojournBuckets-1; b++ {
		if r := sojournLow(b+1) / sojournLow(b); r <= 1 || r > 1.25+1e-9 {
			t.Errorf("buckets %d and %d: ratio %.3f", b, b+1, r)
		}
	}
}

// TestSojournQuantiles: 90 waits of 1 ms and 10 of 100 ms give a median
// near 1 ms and a p99 near 100 ms, each within its bucket's width; Sub
// leaves what came after a snapshot.
func TestSojournQuantiles(t *testing.T) {
	var h SojournHistogram
	for range 90 {
		h.Add(int64(time.Millisecond))
	}
	snap := h
	for range 10 {
		h.Add(int64(100 * time.Millisecond))
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.125*want }
	if p50, p99 := h.Quantile(0.5), h.Quantile(0.99); !near(p50, 1) || !near(p99, 100) {
		t.Errorf("p50 %.3f ms, p99 %.3f ms; want about 1 and 100", p50, p99)
	}
	later := h.Sub(snap)
	if later.N() != 10 || !near(later.Quantile(0.5), 100) {
		t.Errorf("after the snapshot: %d waits, median %.3f", later.N(), later.Quantile(0.5))
	}
	var empty SojournHistogram
	if !math.IsNaN(empty.Quantile(0.5)) {
		t.Error("an empty histogram's median is not NaN")
	}
}
