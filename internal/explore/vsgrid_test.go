package explore

import (
	"math"
	"slices"
	"testing"

	"tlab/internal/advise"
)

// The map's decision at a grid point it did not measure is its measured
// neighbours' when they agree, and undecided between neighbours that
// disagree or where one is open; the rows say why they differ from the
// grid. Worked by hand on a line of five grid points (0..4) of which the
// map measured 0, 2 and 4, and on a 3x3 plane whose four corners the map
// measured.
func TestTheMapIsReadAtTheGridsPoints(t *testing.T) {
	q := []string{"quic", "best"}
	measured := []GridPoint{
		{Values: []float64{0}, Decisions: []string{"meets", "quic"}, Reps: 6},
		{Values: []float64{2}, Decisions: []string{"meets", Undecided}, Reps: 8},
		{Values: []float64{4}, Decisions: []string{"fails", None}, Reps: 6},
	}
	grid := []GridPoint{
		{Values: []float64{0}, Decisions: []string{"meets", "quic"}, Reps: 3},
		{Values: []float64{1}, Decisions: []string{"meets", "quic"}, Reps: 3},
		{Values: []float64{2}, Decisions: []string{"meets", "quic"}, Reps: 3},
		{Values: []float64{3}, Decisions: []string{"fails", None}, Reps: 3},
		{Values: []float64{4}, Decisions: []string{"fails", None}, Reps: 3},
	}
	rows := AgainstGrid(q, grid, measured)
	// By hand: at 1, quic's status is carried from 0 and 2 (both meets);
	// best is open at 2, so undecided at 1. At 3, 2 meets and 4 fails:
	// a boundary between the map's points. At 2, best measured open.
	want := []struct {
		mapLabel, how, kind string
	}{
		{"meets", MapMeasured, ""}, {"quic", MapMeasured, ""},
		{"meets", MapInside, ""}, {Undecided, MapOpenCorner, DisagreeOpenCorner},
		{"meets", MapMeasured, ""}, {Undecided, MapMeasured, DisagreeMeasuredOpen},
		{Undecided, MapBetween, DisagreeBetween}, {Undecided, MapOpenCorner, DisagreeOpenCorner},
		{"fails", MapMeasured, ""}, {None, MapMeasured, ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Map != w.mapLabel || r.How != w.how || r.Kind != w.kind {
			t.Errorf("at %v %s: map %q (%s, %q), want %q (%s, %q)", r.Values, r.Question, r.Map, r.How, r.Kind, w.mapLabel, w.how, w.kind)
		}
	}
	// 10 rows: 6 agree (0 both, 1 status, 2 status, 4 both); the grid
	// decides all 10, the map decides the same 6 of them; none opposite.
	s := Summarize(rows)
	if s.Agree != 6 || s.GridDecided != 10 || s.MapAlso != 6 || s.Opposite != 0 {
		t.Errorf("summary %+v, want 6 agree, 10 decided by the grid, 6 the same by the map, 0 opposite", s)
	}

	// A plane: corners (0,0) (0,2) (2,0) (2,2) measured. The centre
	// (1,1) and the edge midpoints lie inside; where all four corners
	// say meets the map says meets there, and a grid that says fails at
	// (1,1) is an opposite decision: a boundary the map missed.
	corner := func(x, y float64, s string) GridPoint {
		return GridPoint{Values: []float64{x, y}, Decisions: []string{s}, Reps: 4}
	}
	plane := []GridPoint{corner(0, 0, "meets"), corner(0, 2, "meets"), corner(2, 0, "meets"), corner(2, 2, "meets")}
	g := []GridPoint{corner(1, 1, "fails"), corner(0, 1, "meets"), corner(3, 3, "meets")}
	pr := AgainstGrid([]string{"quic"}, g, plane)
	if pr[0].Map != "meets" || pr[0].How != MapInside || pr[0].Kind != DisagreeOpposite {
		t.Errorf("centre: %+v, want meets carried from the corners, opposite", pr[0])
	}
	if pr[1].Map != "meets" || !pr[1].Agree {
		t.Errorf("edge midpoint: %+v, want meets from its edge's two corners", pr[1])
	}
	if pr[2].Map != Undecided || pr[2].How != MapOutside {
		t.Errorf("outside the measured square: %+v, want undecided, not enclosed", pr[2])
	}
	// With one corner failing, the centre is between corners that
	// disagree: undecided, not the majority's meets.
	plane[3] = corner(2, 2, "fails")
	pr = AgainstGrid([]string{"quic"}, g[:1], plane)
	if pr[0].Map != Undecided || pr[0].How != MapBetween {
		t.Errorf("centre with a failing corner: %+v, want undecided between corners that disagree", pr[0])
	}
}

// A point's decisions: a stack decided to fail one requirement fails,
// one open requirement leaves it undecided; the best is the stack that
// meets and is decided better than every other, "none" when all fail.
func TestDecisionsOfAPoint(t *testing.T) {
	reqA := Comparison{Kind: RequirementKind, Stack: "quic"}
	reqB := Comparison{Kind: RequirementKind, Stack: "tcp"}
	pair := Comparison{Kind: PairKind, A: "quic", B: "tcp"}
	comps := []Comparison{reqA, reqB, pair}
	v := func(labels ...string) []Verdict {
		var out []Verdict
		for _, l := range labels {
			out = append(out, Verdict{Label: l})
		}
		return out
	}
	cases := []struct {
		verdicts []Verdict
		want     []string
	}{
		{v("meets", "meets", "quic"), []string{"meets", "meets", "quic"}},
		{v("meets", "meets", Undecided), []string{"meets", "meets", Undecided}},
		// tcp fails: it is out of the running, as advise's best is
		// picked among the stacks that meet; quic is best whatever
		// the pair says.
		{v("meets", "fails", "tcp"), []string{"meets", "fails", "quic"}},
		{v("meets", "fails", Undecided), []string{"meets", "fails", "quic"}},
		{v("fails", "fails", "tcp"), []string{"fails", "fails", None}},
		{v(Undecided, "fails", "quic"), []string{Undecided, "fails", Undecided}},
	}
	for _, c := range cases {
		got := Decisions([]string{"quic", "tcp"}, comps, c.verdicts)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%v: %v, want %v", c.verdicts, got, c.want)
				break
			}
		}
	}
}

// A point stops once what the map says there is fixed: every status
// decided and the best decided or moot, even with pairs and requirements
// open that cannot change it.
func TestAPointStopsOnceWhatTheMapSaysIsFixed(t *testing.T) {
	r1 := advise.Requirement{Metric: "m", Op: "<=", Bound: 1}
	r2 := advise.Requirement{Metric: "n", Op: "<=", Bound: 1}
	stacks := []string{"a", "b", "c"}
	comps := Comparisons(stacks, []advise.Requirement{r1, r2})
	// comps: a,b,c on r1; a,b,c on r2; a-b, a-c, b-c.
	v := func(labels ...string) []Verdict {
		var out []Verdict
		for _, l := range labels {
			out = append(out, Verdict{Label: l})
		}
		return out
	}
	U := Undecided
	cases := []struct {
		name     string
		verdicts []Verdict
		want     bool
	}{
		{"all fail r1, r2 and every pair open", v("fails", "fails", "fails", U, U, U, U, U, U), true},
		{"a fails r1 with r2 open, b and c fail", v("fails", "fails", "fails", U, "meets", "meets", U, U, U), true},
		{"a's status open", v(U, "fails", "fails", U, "fails", "fails", U, U, U), false},
		{"a meets alone: best a, pairs moot", v("meets", "fails", "fails", "meets", U, U, U, U, U), true},
		{"a and b meet, their pair open", v("meets", "meets", "fails", "meets", "meets", U, U, "a", U), false},
		{"a and b meet, a better", v("meets", "meets", "fails", "meets", "meets", U, "a", U, U), true},
	}
	for _, c := range cases {
		if got := fixed(stacks, comps, c.verdicts); got != c.want {
			t.Errorf("%s: fixed = %v, want %v", c.name, got, c.want)
		}
	}
	// Shares: 6 requirement verdicts and one best a point: 7; each of
	// the 3 pairs 21 (7·3): 6/7 + 3/21 = 1.
	want := []int{7, 7, 7, 7, 7, 7, 21, 21, 21}
	if got := Shares(comps); !slices.Equal(got, want) {
		t.Errorf("shares %v, want %v", got, want)
	}
	sum := 0.0
	for _, d := range Shares(comps) {
		sum += 1 / float64(d)
	}
	if !(math.Abs(sum-1) <= 1e-12) {
		t.Errorf("the shares of a point sum to %v, want 1", sum)
	}
}

// An inferred decision is read as the map's at a point it did not
// measure (how: inferred), and what it leaves open falls back on the
// measured corners. By hand on a line 0..4, one stack: the map measured
// 0 (meets) and 4 (fails) and inferred fails at 3 from a measured 2
// (fails); the grid: meets, meets, fails, fails, meets (4 is the grid's
// noise, opposite at a measured point). At 1 no inference and corners 0
// and 2 disagree: undecided, between.
func TestInferredDecisionsAreReadAsTheMaps(t *testing.T) {
	q := []string{"s", "best"}
	g := func(x float64, d ...string) GridPoint { return GridPoint{Values: []float64{x}, Decisions: d, Reps: 3} }
	grid := []GridPoint{g(0, "meets", "s"), g(1, "meets", "s"), g(2, "fails", None), g(3, "fails", None), g(4, "meets", "s")}
	measured := []GridPoint{
		{Values: []float64{0}, Decisions: []string{"meets", "s"}, Reps: 2},
		{Values: []float64{2}, Decisions: []string{"fails", None}, Reps: 2},
		{Values: []float64{3}, Decisions: []string{"fails", None}, Inferred: []bool{true, true}},
		{Values: []float64{4}, Decisions: []string{"fails", None}, Reps: 2},
	}
	rows := AgainstGrid(q, grid, measured)
	want := map[float64]struct{ mp, how string }{
		0: {"meets", MapMeasured}, 1: {Undecided, MapBetween}, 2: {"fails", MapMeasured}, 3: {"fails", MapInferred}, 4: {"fails", MapMeasured},
	}
	for _, r := range rows {
		if r.Question != "s" {
			continue
		}
		w := want[r.Values[0]]
		if r.Map != w.mp || r.How != w.how {
			t.Errorf("at %v: map %s (%s), want %s (%s)", r.Values[0], r.Map, r.How, w.mp, w.how)
		}
	}
	s := Summarize(rows)
	if s.MapInferred != 2 || s.Opposite != 2 {
		t.Errorf("inferred %d (want 2: s and best at 3), opposite %d (want 2: at 4)", s.MapInferred, s.Opposite)
	}
}

// A decision the map took from a floor is read as the floor's, at a
// point it did not measure and at one it measured alike, and counted
// apart from the inferred ones.
func TestFloorDecisionsAreReadAsTheMaps(t *testing.T) {
	q := []string{"s", "best"}
	g := func(x float64, d ...string) GridPoint { return GridPoint{Values: []float64{x}, Decisions: d, Reps: 3} }
	grid := []GridPoint{g(0, "meets", "s"), g(1, "fails", None), g(2, "fails", None)}
	measured := []GridPoint{
		{Values: []float64{0}, Decisions: []string{"meets", "s"}, Reps: 2},
		{Values: []float64{1}, Decisions: []string{"fails", None}, Reps: 2, ByFloor: []bool{true, true}},
		{Values: []float64{2}, Decisions: []string{"fails", None}, ByFloor: []bool{true, true}},
	}
	rows := AgainstGrid(q, grid, measured)
	want := map[float64]string{0: MapMeasured, 1: MapFloor, 2: MapFloor}
	for _, r := range rows {
		if r.How != want[r.Values[0]] || !r.Agree {
			t.Errorf("at %v (%s): map %s (%s), want the grid's %s (%s)", r.Values[0], r.Question, r.Map, r.How, r.Grid, want[r.Values[0]])
		}
	}
	if s := Summarize(rows); s.MapFloor != 4 || s.MapInferred != 0 || s.MapAlso != 6 {
		t.Errorf("by floor %d (want 4), inferred %d (want 0), the grid's also made %d (want 6)", s.MapFloor, s.MapInferred, s.MapAlso)
	}
}
