package analysis

import (
	"math"
	"testing"

	"tlab/internal/stats"
)

// TestUnreachablePSaysWhenNoVerdictIsPossible: a two-sided exact
// Mann-Whitney test of 3 repetitions against 3 can give at the smallest
// 2 / C(6,3) = 2/20 = 0.1 (the two most extreme of 20 equally likely
// orderings), above alpha 0.05 whatever the data: the analysis says 0.1.
// With 10 against 10 a verdict is possible, and a request-by-request
// comparison is not limited so: 0.
func TestUnreachablePSaysWhenNoVerdictIsPossible(t *testing.T) {
	if p := unreachableP([]stats.Comparison{{Unit: "repetition", NA: 3, NB: 3}}); !(math.Abs(p-0.1) <= 1e-12) {
		t.Errorf("3 against 3: %v, want 0.1", p)
	}
	for _, vs := range [][]stats.Comparison{{{Unit: "repetition", NA: 10, NB: 10}}, {{Unit: "request", NA: 3, NB: 3}}, nil,
		{{Unit: "repetition", NA: 3, NB: 3}, {Unit: "repetition", NA: 10, NB: 10}}} {
		if p := unreachableP(vs); p != 0 {
			t.Errorf("%+v: %v, want 0 (a verdict is possible)", vs, p)
		}
	}
}
