package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestQuantileMatchesNumpyDefault(t *testing.T) {
	// numpy.percentile([1, 2, 3, 4, 10], [5, 25, 50, 75, 95, 99])
	// = [1.2, 2., 3., 4., 8.8, 9.76]
	s := []float64{1, 2, 3, 4, 10}
	want := map[float64]float64{0.05: 1.2, 0.25: 2, 0.5: 3, 0.75: 4, 0.95: 8.8, 0.99: 9.76}
	for q, w := range want {
		if got := Quantile(s, q); !near(got, w) {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, w)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("empty sample should give NaN")
	}
}

func TestDescribe(t *testing.T) {
	d := Describe([]float64{4, 2, 6, 8})
	if d.N != 4 || !near(d.Mean, 5) || !near(d.Std, math.Sqrt(20.0/3)) || d.Min != 2 || d.Max != 8 || !near(d.P50, 5) {
		t.Fatalf("%+v", d)
	}
}

func TestJitterIsMeanAbsoluteConsecutiveDifference(t *testing.T) {
	// |12-10| + |11-12| + |15-11| = 7 over 3 differences.
	if got := Jitter([]float64{10, 12, 11, 15}); !near(got, 7.0/3) {
		t.Fatalf("jitter %v, want 7/3", got)
	}
	if !math.IsNaN(Jitter([]float64{1})) {
		t.Fatal("one delay has no jitter")
	}
}

func TestRemoveOutliersThreeScaledMAD(t *testing.T) {
	// Median 10, absolute deviations {0,0,1,1,1,1,90}: MAD 1, scaled
	// 1.4826, limit 4.45: only 100 goes.
	v := []float64{10, 10, 9, 11, 9, 11, 100}
	kept, removed := RemoveOutliers(v, 3)
	if removed != 1 || len(kept) != 6 {
		t.Fatalf("kept %v, removed %d", kept, removed)
	}
	for _, x := range kept {
		if x == 100 {
			t.Fatal("100 kept")
		}
	}
	// A value just inside the limit stays.
	if _, removed := RemoveOutliers([]float64{10, 10, 9, 11, 9, 11, 14.4}, 3); removed != 0 {
		t.Fatalf("14.4 is within 3 scaled MADs, removed %d", removed)
	}
}

// TestQuantileCICovers: over many seeded samples of an exponential
// distribution (skewed, so a normal-theory interval would be wrong), the
// 95 % intervals of the median and the 95th percentile hold the true
// quantile about 95 % of the time.
func TestQuantileCICovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		q, truth float64
		n        int
	}{{0.5, math.Ln2, 100}, {0.95, -math.Log(0.05), 400}} {
		covered, trials := 0, 2000
		for range trials {
			s := make([]float64, c.n)
			for i := range s {
				s[i] = r.ExpFloat64()
			}
			slices.Sort(s)
			lo, hi := QuantileCI(s, c.q, 0.95)
			if lo <= c.truth && c.truth <= hi {
				covered++
			}
		}
		// 2000 trials: the coverage's standard error is 0.5 %.
		if cov := float64(covered) / float64(trials); cov < 0.93 || cov > 0.975 {
			t.Errorf("q %.2f, n %d: coverage %.3f, want 0.95", c.q, c.n, cov)
		}
	}
	if _, hi := QuantileCI([]float64{1, 2, 3}, 0.95, 0.95); !math.IsNaN(hi) {
		t.Errorf("three values cannot bound a 95th percentile from above, got %v", hi)
	}
}
