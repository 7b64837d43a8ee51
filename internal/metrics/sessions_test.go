package metrics

import (
	"testing"

	"tlab/internal/results"
)

// TestConnsPer1000CountsTheSessionsUsed: study A's Fig. 4 counts the
// sessions "used during each experiment" ("when d was greater than 50ms,
// typically only 1 or 2 sessions were used", ../shared/docs/studies.md),
// so the first session counts too. By hand: a window of 500 requests sent
// (and one unsent, which counts for nothing) over connections 1, 2 and 3,
// where 1 and 2 were opened in the warm-up (the highest connection seen
// there is 2) and one connection was dialled in the window (3): 3
// sessions, 3 × 1000 / 500 = 6 per 1000 (the window's dials alone gave
// 1 × 1000 / 500 = 2). One connection kept from the warm-up through 500
// requests is 1 session, 2 per 1000, where the dials alone gave 0.
func TestConnsPer1000CountsTheSessionsUsed(t *testing.T) {
	m, ok := Lookup("conns_per_1000")
	if !ok {
		t.Fatal("conns_per_1000 is not registered")
	}
	window := func(ids ...int) []results.Record {
		var recs []results.Record
		for i, id := range ids {
			recs = append(recs, results.Record{Seq: i, ConnID: id, DelayMs: 10, DoneMs: float64(i) + 10})
		}
		return recs
	}
	var three []int
	for i := range 500 {
		three = append(three, []int{1, 2, 3}[i%3])
	}
	threeRecs := append(window(three...), results.Record{Seq: 500, Error: "unsent", Unsent: true})
	for _, c := range []struct {
		name string
		in   *Input
		want float64
	}{
		{"three sessions, one dialled in the window", &Input{Records: threeRecs, Facts: map[string]float64{"conns_opened": 1, "warmup_conn_id_max": 2}}, 6},
		{"one session kept from the warm-up", &Input{Records: window(make1s(500)...), Facts: map[string]float64{"conns_opened": 0, "warmup_conn_id_max": 1}}, 2},
		{"no warm-up: the window's dials are every session", &Input{Records: window(make1s(500)...), Facts: map[string]float64{"conns_opened": 1}}, 2},
	} {
		if got := m.Compute(c.in); got != c.want {
			t.Errorf("%s: %v per 1000, want %v", c.name, got, c.want)
		}
	}
}

func make1s(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}
