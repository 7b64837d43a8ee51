package explore

import (
	"context"
	"slices"
	"strings"
	"testing"

	"tlab/internal/advise"
)

// decidedPoint is a measured point whose verdicts say every stack meets
// (or fails) the requirement, as judge would leave it.
func decided(s *search, idx [2]int, label string) {
	s.add(idx)
	p := s.points[idx]
	p.Reps = make([]map[string]map[string]float64, 6)
	for i, c := range s.comps {
		if c.Kind == RequirementKind {
			p.Verdicts[i].Label = label
		}
	}
	p.Settled = true
}

func newSearch(params []Param, coarse int) *search {
	cfg := Config{Params: params, Stacks: []string{"quic", "tcp"}, Require: require(50), Coarse: coarse, Monotone: make([]int, len(params))}
	for i := range cfg.Monotone {
		cfg.Monotone[i] = 1
	}
	cfg.Defaults()
	s := &search{cfg: cfg, comps: comparisons(cfg.Stacks, cfg.Require), points: map[[2]int]*PointResult{}}
	for i, p := range params {
		d := p.depth(coarse)
		s.n[i] = coarse << d
	}
	return s
}

func picked(s *search, from int) [][2]int {
	var out [][2]int
	for _, p := range s.order[from:] {
		out = append(out, p.Index)
	}
	return out
}

// The monotone search picks, each time, the point whose decision settles
// the most of what is open whichever way it goes (the lesser of the open
// points at least as bad and at least as good, summed over the stacks
// open there), which is bisection on a line. Worked by hand:
//   - a line of 9 points (0..8), nothing known: point i settles
//     min(9-i, i+1): 4 (5 either way); a second pick in the same round
//     finds nothing open (4's two sides cover the line);
//   - 0..4 known to meet: 5: min(4,1)=1, 6: min(3,2)=2, 7: min(2,3)=2,
//     8: 1: the first best, 6;
//   - a 5x5 plane, nothing known: (i,j) settles min((5-i)(5-j),
//     (i+1)(j+1)): (2,2), 9; with its two quadrants counted settled the
//     open points are (0..1, 3..4) and (3..4, 0..1), where (4,0)
//     settles min(|{(4,0),(4,1)}|, |{(3,0),(4,0)}|) = 2, as do (3,1),
//     (0,4) and (1,3), the corners (3,0), (4,1), (0,3), (1,4) only 1:
//     (4,0) comes first in the lattice's order (rows of rtt).
func TestTheMonotoneSearchBisects(t *testing.T) {
	line := Param{Path: "link.loss", Low: 0, High: 8, Unit: "%", Resolution: 1}
	s := newSearch([]Param{line}, 2)
	if s.n[0] != 8 {
		t.Fatalf("lattice of %d steps, want 8", s.n[0])
	}
	s.grow()
	if got := picked(s, 0); !slices.Equal(got, [][2]int{{4, 0}}) {
		t.Errorf("first picks on an open line: %v, want [[4 0]]", got)
	}
	s = newSearch([]Param{line}, 2)
	decided(s, [2]int{4, 0}, string(advise.Meets))
	s.grow()
	if got := picked(s, 1); !slices.Equal(got, [][2]int{{6, 0}}) {
		t.Errorf("picks with 0..4 meeting: %v, want [[6 0]]", got)
	}
	rtt := Param{Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}
	plane := newSearch([]Param{{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}, rtt}, 2)
	plane.grow()
	if got := picked(plane, 0); !slices.Equal(got, [][2]int{{2, 2}, {4, 0}}) {
		t.Errorf("first picks on an open plane: %v, want [[2 2] [4 0]]", got)
	}
}

// A failure carries to every point at least as bad, a success to every
// point at least as good, and nowhere else; contradicting inferences
// decide nothing. By hand on the 5x5 plane: quic and tcp fail at (2,2)
// and meet at (1,1): fail at i>=2 and j>=2 (9 points), meet at i<=1 and
// j<=1 (4), undecided at the other 12; the best is None where both fail.
func TestStatusesAreInferredAlongTheWorseningAxes(t *testing.T) {
	rtt := Param{Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}
	s := newSearch([]Param{{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}, rtt}, 2)
	decided(s, [2]int{2, 2}, string(advise.Fails))
	decided(s, [2]int{1, 1}, string(advise.Meets))
	counts := map[string]int{}
	for _, lp := range s.latticeResult() {
		i, j := lp.Index[0], lp.Index[1]
		want := Undecided
		switch {
		case i >= 2 && j >= 2:
			want = string(advise.Fails)
		case i <= 1 && j <= 1:
			want = string(advise.Meets)
		}
		for k := range lp.Status {
			if lp.Status[k] != want {
				t.Errorf("(%d,%d) %s: %s, want %s", i, j, s.cfg.Stacks[k], lp.Status[k], want)
			}
		}
		if want == string(advise.Fails) && lp.Best != None {
			t.Errorf("(%d,%d): best %q where both fail, want none", i, j, lp.Best)
		}
		counts[lp.How[0]]++
	}
	if counts[HowMeasured] != 2 || counts[HowInferred] != 11 {
		t.Errorf("how: %v, want 2 measured and 11 inferred (9+4-2)", counts)
	}
	// A success at a point worse than a failure contradicts: nothing is
	// inferred where both reach.
	decided(s, [2]int{3, 3}, string(advise.Meets))
	st, _ := s.statusAt([2]int{2, 3}, s.ownStatuses())
	if st[0] != Undecided {
		t.Errorf("(2,3) between a failure at (2,2) and a success at (3,3): %s, want undecided", st[0])
	}
}

// Run end to end on a plane whose answer is known: a stack meets the
// bound while loss + rtt/10 stays below 4 (delay 20 ms against 100 ms
// beyond it, the bound 50 ms). The map's statuses at every point of the
// finest grid are never the opposite of the truth, and it measures fewer
// than half of the 25 points.
func TestTheMonotoneMapIsRightWhereItInfers(t *testing.T) {
	lab := &fakeLab{seed: 5, shared: 2, own: 2, delay: func(_ string, x []float64) float64 {
		if x[0]+x[1]/10 >= 4 {
			return 100
		}
		return 20
	}}
	cfg := Config{Params: []Param{{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}, {Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}},
		Stacks: []string{"quic", "tcp"}, Require: require(50), Coarse: 2, MaxReps: 10, Monotone: []int{1, 1}}
	m, err := Run(context.Background(), cfg, lab)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Lattice) != 25 {
		t.Fatalf("lattice of %d points, want 25", len(m.Lattice))
	}
	decidedStatuses := 0
	for _, lp := range m.Lattice {
		truth := string(advise.Meets)
		if lp.Values[0]+lp.Values[1]/10 >= 4 {
			truth = string(advise.Fails)
		}
		for k, st := range lp.Status {
			if st != Undecided && st != truth {
				t.Errorf("%s %s: %s (%s), the truth is %s", lp.Label(), cfg.Stacks[k], st, lp.How[k], truth)
			}
			if st != Undecided {
				decidedStatuses++
			}
		}
	}
	t.Logf("%d points measured, %d cells, %d of 50 statuses decided", len(m.Points), m.Cells, decidedStatuses)
	if !strings.Contains(m.Answer(), "Inferred along link.loss and link.rtt") {
		t.Errorf("the answer does not say what it inferred:\n%s", m.Answer())
	}
	if len(m.Points) >= 13 || decidedStatuses < 40 {
		t.Errorf("%d points measured (want < 13), %d of 50 statuses decided (want >= 40)", len(m.Points), decidedStatuses)
	}
}

// The fewest repetitions that can decide anything at the map's level, by
// hand: study A's map (deadline_miss_pct <= 1 on [0, 100], 4 stacks, 25
// points: 1/alpha' = 25·5/0.05 = 2500): the bet and the t mixture at 99
// points from the bound give 806 at n = 2 and 57 513 at n = 3
// (TestTheBoundedBetByHand's sums, cubed): 3. Study D's (an unbounded
// latency, 2 stacks: 25·3/0.05 = 1500): the t mixture's ceiling
// (1+4n)^((n-1)/2) is 441 at n = 5 and 3125 at n = 6, and the floor bet
// one unit above a bound of 100 pays (1 + (k/11)/100)^n ≈ 1.03 at most,
// so their mean is 221 and 1563: 6. A point that
// has had one more than that and decided nothing in its last two yields
// its place while other points are open, and comes back once none is.
func TestAPointThatStopsGainingYieldsItsPlace(t *testing.T) {
	loss := Param{Path: "link.loss", Low: 0, High: 4, Unit: "%", Resolution: 1}
	rtt := Param{Path: "link.rtt", Low: 5, High: 45, Unit: "ms", Resolution: 10}
	cases := []struct {
		stacks []string
		req    advise.Requirement
		want   int
	}{
		{[]string{"quic", "tcp", "h3", "h1s"}, advise.Requirement{Metric: "deadline_miss_pct", Op: "<=", Bound: 1}, 3},
		{[]string{"mqtt-tls", "mqtt-quic"}, advise.Requirement{Metric: "message_latency_p95_ms", Op: "<=", Bound: 100}, 6},
	}
	for _, c := range cases {
		cfg := Config{Params: []Param{loss, rtt}, Stacks: c.stacks, Require: []advise.Requirement{c.req}, MaxPoints: 25, MaxReps: 8, Monotone: []int{1, 1}}
		cfg.Defaults()
		s := &search{cfg: cfg, comps: comparisons(cfg.Stacks, cfg.Require), points: map[[2]int]*PointResult{}}
		if got := s.fewestToDecide(); got != c.want {
			t.Errorf("%s: fewest repetitions to decide %d, want %d", c.req, got, c.want)
		}
	}
	s := newSearch([]Param{loss, rtt}, 2)
	s.park = 4
	s.add([2]int{2, 2})
	p := s.points[[2]int{2, 2}]
	p.Reps = make([]map[string]map[string]float64, 4)
	for _, tc := range []struct {
		gained int
		want   bool
	}{{2, true}, {3, false}, {0, true}} {
		p.gained = tc.gained
		if got := s.parked(p); got != tc.want {
			t.Errorf("4 repetitions, the last decision at %d: parked %v, want %v", tc.gained, got, tc.want)
		}
	}
	p.gained = 2
	if reqs := s.plan(); len(reqs) != 0 {
		t.Errorf("a parked point with points left to pick is planned: %v", reqs)
	}
	s.exhausted = true
	if reqs := s.plan(); len(reqs) != 1 || reqs[0].Rep != 5 {
		t.Errorf("with nothing left to pick the parked point resumes: %v, want its 5th repetition", reqs)
	}
}
