package explore

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The decision alone, against verdicts built by hand (before: quic below
// the boundary, tcp above it).
func TestMovementDecidesFromTheVerdicts(t *testing.T) {
	for _, c := range []struct {
		below, above, want string
		why                string
	}{
		{"quic", "tcp", MovedNo, "both sides decided as before"},
		{"quic", "quic", MovedYes, "the side above now decided the other way: no flip left"},
		{"tcp", "tcp", MovedYes, "the side below decided the other way"},
		{"tcp", "quic", MovedYes, "both sides changed: the flip reversed"},
		{"tcp", Undecided, MovedYes, "a decided side changed, whatever the other says"},
		{"quic", Undecided, MovedUndecided, "one side as before, the other undecided: no evidence of a move"},
		{Undecided, "tcp", MovedUndecided, "as above, mirrored"},
		{Undecided, Undecided, MovedUndecided, "nothing decided"},
	} {
		if got := Movement("quic", "tcp", c.below, c.above); got != c.want {
			t.Errorf("after %s below, %s above: %s, want %s (%s)", c.below, c.above, got, c.want, c.why)
		}
	}
}

// mechLab is a lab where one impairment makes a flip along the explored
// parameter: quic's delay minus tcp's is slope·(x − 50) while the cause
// is on the link (tcp better above x = 50), and -5 ms everywhere without
// it (quic better at every point: no flip). The base link has 1 % loss
// and 5 ms of jitter; a point's settings link.loss=0% or link.jitter=0ms
// remove one. cause "rtt" is a flip no removal touches; "equal" makes the
// stacks equal without loss (the comparison cannot decide there),
// "equal-jitter" without jitter.
// Shared noise is drawn per point index and repetition: the same
// repetition meets the same noise with or without an impairment (the
// repetition's seed).
type mechLab struct {
	cause string
	// scale multiplies the explored value into x (0: 1).
	scale float64
	cells int
}

func (l *mechLab) Measure(_ context.Context, reqs []Request) ([]Outcome, error) {
	var out []Outcome
	for _, r := range reqs {
		loss, jitter := true, true
		for _, s := range r.Point.Settings {
			if s.Path == "link.loss" && s.Value == "0%" {
				loss = false
			}
			if s.Path == "link.jitter" && s.Value == "0ms" {
				jitter = false
			}
		}
		x := r.Point.Values[0] * max(l.scale, 1)
		diff := -5.0
		switch {
		case l.cause == "loss" && loss, l.cause == "jitter" && jitter, l.cause == "rtt":
			diff = 0.4 * (x - 50)
		case l.cause == "equal" && loss:
			diff = 0.4 * (x - 50)
		case l.cause == "equal":
			diff = 0
		case l.cause == "equal-jitter" && jitter:
			diff = 0.4 * (x - 50)
		case l.cause == "equal-jitter":
			diff = 0
		}
		rng := rand.New(rand.NewPCG(7, uint64(r.Point.Index[0])<<8|uint64(r.Rep)))
		common := 2 * rng.NormFloat64()
		o := Outcome{Request: r, Values: map[string]map[string]float64{
			"quic": {"delay_p99_ms": 40 + diff + common + 0.3*rng.NormFloat64(), "conns_per_1000": 1},
			"tcp":  {"delay_p99_ms": 40 + common + 0.3*rng.NormFloat64(), "conns_per_1000": 1},
		}}
		if loss {
			// tcp reconnects where packets are lost: the records' evidence.
			o.Values["tcp"]["conns_per_1000"] = 20
		}
		out = append(out, o)
		l.cells += 2
	}
	return out, nil
}

var (
	rttRange = Param{Path: "link.rtt", Low: 10, High: 90, Unit: "ms", Resolution: 1}
	removals = []Ablation{noLoss, noJitter, noQueue}
	noLoss   = Ablation{Name: "no loss", Impairment: "loss", Settings: []Setting{{Path: "link.loss", Value: "0%"}}}
	noJitter = Ablation{Name: "no jitter", Impairment: "jitter", Settings: []Setting{{Path: "link.jitter", Value: "0ms"}}}
	noQueue  = Ablation{Name: "no queue", Impairment: "queue", Absent: true, Note: "the link has no rate limit"}
)

// explained maps the lab over the range and ablates its pair boundary;
// every removal's run is the same lab (it reads the settings).
func explained(t *testing.T, lab *mechLab, p Param, budget Budget) (*Map, Why) {
	t.Helper()
	cfg := Config{Params: []Param{p}, Stacks: []string{"quic", "tcp"}, Require: require(1000), MaxReps: 10, WhyShare: DefaultWhyShare, Evidence: []string{"conns_per_1000"}}
	m, err := Run(context.Background(), cfg, lab)
	if err != nil {
		t.Fatal(err)
	}
	pair := pairOf(m)
	var bs []Boundary
	for _, b := range m.Boundaries {
		if b.Comparison == pair {
			bs = append(bs, b)
		}
	}
	if len(bs) != 1 {
		t.Fatalf("%d pair boundaries, want the one at 50:\n%s", len(bs), m.Answer())
	}
	m.Boundaries = bs
	var asked []string
	ex, err := Explain(context.Background(), m, cfg, removals, func(a Ablation) (Measurer, error) {
		asked = append(asked, a.Name)
		return lab, nil
	}, budget)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(asked, "no queue") {
		t.Errorf("a removal with nothing to remove was measured")
	}
	m.Why = ex
	return m, ex.Whys[0]
}

func removal(w Why, name string) AblationResult {
	for _, r := range w.Removals {
		if r.Ablation.Name == name {
			return r
		}
	}
	return AblationResult{}
}

// A flip along RTT that loss makes is loss's, one jitter makes is
// jitter's; a flip no removal touches, or one whose removal leaves the
// stacks equal (undecidable), is attributed to nothing: never to a
// mechanism the measurements do not show.
func TestTheRemovalThatMovesTheBoundaryIsItsMechanism(t *testing.T) {
	for _, c := range []struct {
		cause         string
		mechanism     []string
		loss, jitter  string
		sentenceSays  string
		sentenceLacks string
	}{
		{cause: "loss", mechanism: []string{"loss"}, loss: MovedYes, jitter: MovedNo, sentenceSays: "is loss's", sentenceLacks: "jitter's"},
		{cause: "jitter", mechanism: []string{"jitter"}, loss: MovedNo, jitter: MovedYes, sentenceSays: "is jitter's", sentenceLacks: "loss's"},
		{cause: "rtt", mechanism: nil, loss: MovedNo, jitter: MovedNo, sentenceSays: "not attributed", sentenceLacks: "'s:"},
		{cause: "equal", mechanism: nil, loss: MovedUndecided, jitter: MovedNo, sentenceSays: "not attributed", sentenceLacks: "'s:"},
	} {
		t.Run(c.cause, func(t *testing.T) {
			lab := &mechLab{cause: c.cause}
			m, w := explained(t, lab, rttRange, Budget{})
			t.Log(w.Says)
			if !slices.Equal(w.Mechanism, c.mechanism) {
				t.Errorf("mechanism %v, want %v: %s", w.Mechanism, c.mechanism, w.Says)
			}
			if got := removal(w, "no loss").Moved; got != c.loss {
				t.Errorf("no loss: %s, want %s: %s", got, c.loss, removal(w, "no loss").Says)
			}
			if got := removal(w, "no jitter").Moved; got != c.jitter {
				t.Errorf("no jitter: %s, want %s: %s", got, c.jitter, removal(w, "no jitter").Says)
			}
			if got := removal(w, "no queue").Moved; got != MovedAbsent {
				t.Errorf("no queue: %s, want %s", got, MovedAbsent)
			}
			if !strings.Contains(w.Says, c.sentenceSays) || strings.Contains(w.Says, c.sentenceLacks) {
				t.Errorf("the line says %q; want %q in it and not %q", w.Says, c.sentenceSays, c.sentenceLacks)
			}
			if !strings.Contains(m.Answer(), "Why: "+w.Says) {
				t.Errorf("the answer lacks the why line:\n%s", m.Answer())
			}
			// The records' evidence without loss: tcp opens 1
			// connection per 1000 requests instead of 20.
			for _, a := range removal(w, "no loss").Accounts {
				if a.Stack == "tcp" && a.Figure == "conns_per_1000" && a.Mean != 1 {
					t.Errorf("tcp conns_per_1000 without loss %v at %s, want 1", a.Mean, a.Side)
				}
			}
			dir := t.TempDir()
			if err := m.WriteFiles(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, WhyFile))
			if err != nil {
				t.Fatal(err)
			}
			// One row per removal and stack of the pair, under the header.
			if rows := strings.Count(string(b), "\n"); rows != 1+3*2 {
				t.Errorf("%s has %d lines, want 7:\n%s", WhyFile, rows, b)
			}
			if !strings.Contains(string(b), "conns_per_1000_below_after") {
				t.Errorf("%s lacks the evidence columns:\n%s", WhyFile, b)
			}
		})
	}
}

// A flip along loss that loss alone makes: removing loss is the explored
// parameter (not measured), removing jitter leaves it: it is loss's,
// loss being what changes across it. The same flip made by jitter is
// jitter's, not loss's. One whose stacks are equal without jitter
// (undecidable there) is not attributed, not even to loss.
func TestAFlipAlongTheExploredImpairment(t *testing.T) {
	for _, c := range []struct{ cause, want string }{{"loss", "loss"}, {"jitter", "jitter"}, {"equal-jitter", ""}} {
		// The lab's x is the loss in % ×10 here (0..10 % → 0..100), so
		// the flip sits at 5 %.
		_, w := explained(t, &mechLab{cause: c.cause, scale: 10}, lossRange, Budget{})
		t.Log(w.Says)
		if strings.Join(w.Mechanism, "+") != c.want {
			t.Errorf("flip made by %s: mechanism %v (%s)", c.cause, w.Mechanism, w.Says)
		}
		if got := removal(w, "no loss").Moved; got != MovedExplored {
			t.Errorf("no loss along loss: %s, want %s", got, MovedExplored)
		}
	}
}

// A budget too small for the ablations attributes nothing.
func TestAnAblationCutByTheBudgetAttributesNothing(t *testing.T) {
	lab := &mechLab{cause: "loss"}
	m, w := explained(t, lab, rttRange, Budget{Cells: 4})
	if len(w.Mechanism) != 0 || removal(w, "no loss").Moved != MovedNotMeasured {
		t.Errorf("with 4 cells: mechanism %v, no loss %s: %s", w.Mechanism, removal(w, "no loss").Moved, w.Says)
	}
	if m.Why.Cells > 4 {
		t.Errorf("the ablations spent %d cells of 4", m.Why.Cells)
	}
}

// stepLab is noise-free: quic's delay minus tcp's is -5 ms below x = 40
// and +5 ms above it, -5 ms everywhere without jitter (link.jitter=0ms).
// Every difference is the same at every repetition, so the t mixture's
// e-value after n repetitions is its limit (1+4n)^((n-1)/2): 13, 70.09,
// 441 and 3125 at n = 3, 4, 5, 6 (g = 4).
type stepLab struct{}

func (stepLab) Measure(_ context.Context, reqs []Request) ([]Outcome, error) {
	var out []Outcome
	for _, r := range reqs {
		diff := 5.0
		if r.Point.Values[0] < 40 || slices.Contains(r.Point.Settings, Setting{Path: "link.jitter", Value: "0ms"}) {
			diff = -5
		}
		out = append(out, Outcome{Request: r, Values: map[string]map[string]float64{
			"quic": {"delay_p99_ms": 40 + diff}, "tcp": {"delay_p99_ms": 40}}})
	}
	return out, nil
}

// The map and its ablations are one Bonferroni family: the map's
// verdicts share alpha·(1−share) among its tests, the ablations'
// alpha·share among theirs. By hand, with alpha 0.05, 5 points × 3
// comparisons = 15 map tests and a share of 0.6:
//   - the map decides at e ≥ 15/(0.05·0.4) = 750: at 6 repetitions
//     (441 < 750 ≤ 3125); with no share at e ≥ 15/0.05 = 300: at 5
//     (70.09 < 300 ≤ 441);
//   - the one pair boundary (between 25 and 50) gets "no jitter" on its
//     two sides ("no queue" is absent): 2 ablation tests at 0.05·0.6 =
//     0.03, deciding at e ≥ 2/0.03 = 66.7: at 4 repetitions (13 < 66.7 ≤
//     70.09). At the map's per-test level (the rule before, 300) they
//     would take 5.
func TestTheMapAndItsAblationsShareAlpha(t *testing.T) {
	p := Param{Path: "link.rtt", Low: 0, High: 100, Unit: "ms", Resolution: 25}
	for _, c := range []struct {
		share   float64
		mapReps int
	}{{0, 5}, {0.6, 6}} {
		cfg := Config{Params: []Param{p}, Stacks: []string{"quic", "tcp"}, Require: require(1000), Coarse: 2, MaxReps: 10,
			MaxPoints: 5, Alpha: 0.05, WhyShare: c.share}
		m, err := Run(context.Background(), cfg, stepLab{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Tests != 15 {
			t.Fatalf("share %g: %d map tests, want 15", c.share, m.Tests)
		}
		for _, pt := range m.Points {
			for i, v := range pt.Verdicts {
				if v.Label == Undecided || v.N != c.mapReps {
					t.Errorf("share %g: point %v comparison %d: %s after %d repetitions, want decided after %d", c.share, pt.Values[0], i, v.Label, v.N, c.mapReps)
				}
			}
		}
		if c.share == 0 {
			if _, err := Explain(context.Background(), m, cfg, []Ablation{noJitter, noQueue}, func(Ablation) (Measurer, error) { return stepLab{}, nil }, Budget{}); err == nil {
				t.Error("a map that kept no alpha for the why was explained")
			}
			continue
		}
		if len(m.Boundaries) != 1 || m.Boundaries[0].Low != 25 || m.Boundaries[0].High != 50 {
			t.Fatalf("boundaries %+v, want the pair's between 25 and 50:\n%s", m.Boundaries, m.Answer())
		}
		ex, err := Explain(context.Background(), m, cfg, []Ablation{noJitter, noQueue}, func(Ablation) (Measurer, error) { return stepLab{}, nil }, Budget{})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Tests != 2 || ex.Alpha < 0.03-1e-12 || ex.Alpha > 0.03+1e-12 {
			t.Errorf("the ablations' family: %d tests at %g, want 2 at 0.03", ex.Tests, ex.Alpha)
		}
		r := ex.Whys[0].Removals[0]
		if r.Ablation.Name != "no jitter" || r.Below.N != 4 || r.Above.N != 4 || r.Moved != MovedYes {
			t.Errorf("no jitter: %s after %d below, %s after %d above, moved %s; want quic after 4 on both sides, moved yes",
				r.Below.Label, r.Below.N, r.Above.Label, r.Above.N, r.Moved)
		}
	}
}

// TestAccountsLeaveOutWhatACellLacks: a figure a repetition's cell does
// not have (a request-response figure beside a pubsub boundary) is no
// value, not 0: by hand, conns_per_1000 of 2 in one repetition and absent
// in the other means 2 (not (2+0)/2 = 1); a figure no repetition has is
// NaN (not 0).
func TestAccountsLeaveOutWhatACellLacks(t *testing.T) {
	reps := []map[string]map[string]float64{{"tcp": {"conns_per_1000": 2}}, {"tcp": {}}}
	got := accounts("below", 0.01, reps, []string{"tcp"}, []string{"conns_per_1000", "bytes_per_request"})
	if len(got) != 2 {
		t.Fatalf("accounts %+v, want two", got)
	}
	if got[0].Mean != 2 {
		t.Errorf("conns_per_1000 present once: mean %v, want 2", got[0].Mean)
	}
	if !math.IsNaN(got[1].Mean) {
		t.Errorf("bytes_per_request absent: mean %v, want NaN", got[1].Mean)
	}
}
