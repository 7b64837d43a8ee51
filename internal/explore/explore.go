package explore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"tlab/internal/advise"
	"tlab/internal/metrics"
)

// Setting is one explored field at a point, as the scenario reads it.
type Setting struct {
	Path  string
	Value string
}

// Point is a place in the explored range: its coordinates on the search's
// lattice (the second is 0 with one parameter), the parameters' values
// and the same values as the scenario's fields read them.
type Point struct {
	Index    [2]int
	Values   []float64
	Settings []Setting
}

// Label names the point by its settings ("link.loss=1.797%").
func (p Point) Label() string {
	var parts []string
	for _, s := range p.Settings {
		parts = append(parts, s.Path+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

// Request asks for one repetition of every stack at a point. Rep counts
// from 1 and sets the repetition's seed: every stack at a point meets
// the same loss and jitter pattern in the same repetition.
type Request struct {
	Point Point
	Rep   int
}

// Outcome is what one repetition measured: each stack's figures by
// metric name (NaN: not measured).
type Outcome struct {
	Request
	Values map[string]map[string]float64
}

// Measurer runs a batch of repetitions (one round of the search) and
// returns an outcome for each request, in any order.
type Measurer interface {
	Measure(ctx context.Context, reqs []Request) ([]Outcome, error)
}

// Budget bounds what the search spends: cells (one stack's repetition at
// a point each) and wall time; zero is no bound.
type Budget struct {
	Cells    int
	Duration time.Duration
}

// Config is a search.
type Config struct {
	Params []Param
	Stacks []string
	// Require are the application's requirements; the first one's
	// metric (and direction) is what the stacks are compared by.
	Require []advise.Requirement
	// Coarse is the number of intervals of the initial grid along each
	// parameter (its points are Coarse+1 per parameter).
	Coarse int
	// MinReps and MaxReps bound each point's repetitions: a point is
	// repeated until every comparison is decided or MaxReps is reached.
	MinReps, MaxReps int
	// Alpha is the chance, over the whole map, of any decided verdict
	// being wrong: it is shared (Bonferroni) among MaxPoints points'
	// comparisons.
	Alpha float64
	// WhyShare is the part of Alpha kept for the ablations' judgements
	// (Explain): 0 when the boundaries will not be explained. The map's
	// judgements share Alpha·(1−WhyShare) among Tests, the ablations'
	// Alpha·WhyShare among theirs, so that the chance of any decided
	// verdict being wrong, over the map and its ablations together, is at
	// most Alpha (Bonferroni). It is set before the search: the map's
	// level must not depend on what the map finds.
	WhyShare float64
	Rule     Rule
	// MaxPoints bounds the points measured (and sets the share of
	// alpha): 0 for 16 with one parameter and 64 with two, or fewer when
	// the budget's cells cannot pay for them.
	MaxPoints int
	Budget    Budget
	// Now is the clock for the duration budget (time.Now when nil).
	Now func() time.Time
	// Round, when set, hears each round's plan before it is measured.
	Round func(round int, reqs []Request)
	// AfterRound, when set, hears the map as it stands after each
	// round (Stopped "running"): the live view draws it as it grows.
	AfterRound func(*Map)
	// Monotone are the directions along Params in which the network gets
	// worse by construction (+1: as the value grows, -1: as it falls, 0:
	// no assumption; nil: none). Along them a stack's status is inferred
	// (monotone.go) and the search picks the points that settle the most
	// of the range, instead of a coarse grid refined where corners
	// disagree.
	Monotone []int
	// Evidence are figures the measurer reports beside the compared ones
	// (connections opened, bytes per request, sends behind schedule):
	// each boundary shows their means on either side, per stack, as the
	// records' own account of what changed there.
	Evidence []string
	// Floor, when set, is the least value a metric can take at a point
	// for a stack, proved from the point's compiled cell and workload
	// (plan.Cell.Floor: a message that crosses the emulated link both
	// ways takes at least the link's least round trip); ok is false where
	// nothing is proved. A requirement the floor alone settles (a
	// latency whose floor is above its bound) is decided by construction,
	// with no repetition (floor.go); below the bound the floor lets the
	// bet on "above the bound" stake more (floorBetLogE).
	Floor func(p Point, stack, metric string) (floor float64, ok bool)
}

// Defaults fills what the configuration leaves out.
func (c *Config) Defaults() {
	if c.Coarse == 0 {
		c.Coarse = 4
	}
	if c.MinReps == 0 {
		c.MinReps = 2
	}
	if c.MaxReps == 0 {
		c.MaxReps = 10
	}
	if c.Alpha == 0 {
		c.Alpha = 0.05
	}
	if c.Rule == "" {
		c.Rule = TMixture
	}
	if c.MaxPoints == 0 {
		c.MaxPoints = 16
		if len(c.Params) == 2 {
			c.MaxPoints = 64
		}
		if c.Budget.Cells > 0 && len(c.Stacks) > 0 {
			c.MaxPoints = max(2, min(c.MaxPoints, c.Budget.Cells/(len(c.Stacks)*c.MinReps)))
		}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate refuses a search that cannot run.
func (c *Config) Validate() error {
	switch {
	case len(c.Params) == 0 || len(c.Params) > 2:
		return fmt.Errorf("explore: give one or two parameters, not %d", len(c.Params))
	case len(c.Stacks) < 1:
		return errors.New("explore: no stacks to compare")
	case len(c.Require) == 0:
		return errors.New("explore: no requirement: the first one's metric is what the stacks are compared by (require: [\"delay_p99_ms<=20\"])")
	case c.Coarse < 1:
		return fmt.Errorf("explore: coarse %d: want at least 1 interval", c.Coarse)
	case c.MinReps < 2:
		return fmt.Errorf("explore: min_repetitions %d: the sequential rule needs at least 2", c.MinReps)
	case c.MaxReps < c.MinReps:
		return fmt.Errorf("explore: max_repetitions %d is below min_repetitions %d", c.MaxReps, c.MinReps)
	case c.Alpha <= 0 || c.Alpha >= 1:
		return fmt.Errorf("explore: alpha %v: want between 0 and 1", c.Alpha)
	case c.WhyShare < 0 || c.WhyShare >= 1:
		return fmt.Errorf("explore: the why's share of alpha %v: want 0 or more, below 1", c.WhyShare)
	}
	for _, p := range c.Params {
		if p.Log && p.Low <= 0 {
			return fmt.Errorf("explore: %s: a logarithmic range needs a low end above 0", p.Path)
		}
	}
	return c.Rule.Valid()
}

// Kind of comparison.
const (
	RequirementKind = "requirement"
	PairKind        = "pair"
)

// Comparison is one question asked at every point: does a stack meet a
// requirement, or which of two stacks has the better value of the
// priority metric.
type Comparison struct {
	Kind        string             `json:"kind"`
	Stack       string             `json:"stack,omitempty"`
	Requirement advise.Requirement `json:"requirement"`
	A           string             `json:"a,omitempty"`
	B           string             `json:"b,omitempty"`
	// Range is the requirement's metric's own bounds (metrics.Metric's
	// Bounds: 0 and 100 for a share in percent), nil where it has none:
	// a requirement on a bounded metric is judged by the rule and by a
	// bet on the bounded mean together (LogE). One value is a floor
	// only (a latency's 0, where the metric has no largest value; JSON
	// has no infinity): then the bet is on the mean being above the
	// bound, the one side a floor makes safe (floorBetLogE), and joins
	// the rule where the values lie above it on the whole.
	Range []float64 `json:"range,omitempty"`
}

// LogE is the comparison's e-value for differences d under rule: the
// rule's own, or, for a requirement on a bounded metric, the mean of the
// rule's and the bounded bet's (bettingLogE). The mean of two e-values
// is an e-value (each has expectation at most 1 under the null, so has
// their mean), and the mean of two test martingales is one, so Ville's
// inequality still holds at every look; the mean costs at most a factor
// of two against the better of the two, and gains the bet's growth where
// the values sit far from the bound with no spread.
func (c Comparison) LogE(rule Rule, d []float64) float64 {
	le := rule.LogE(d)
	if c.Kind != RequirementKind {
		return le
	}
	switch len(c.Range) {
	case 2:
		return logMeanExp([]float64{le, bettingLogE(d, c.Range[0], c.Range[1], c.Requirement.Bound)})
	case 1:
		// A floor only: the bet speaks for "above the bound" alone, so
		// it joins the rule only where the values lean that way, and
		// evidence for "below" is the rule's, not halved. Each wrong
		// verdict is still one e-process crossing 1/alpha: "above" when
		// the mean is at most the bound needs the mean of the rule and
		// the bet to cross (a supermartingale there), "below" when the
		// mean is above it needs the rule alone to cross with a
		// negative mean; for any true mean only one of the two is wrong.
		if finiteMean(d) > 0 {
			return logMeanExp([]float64{le, floorBetLogE(d, c.Range[0], c.Requirement.Bound)})
		}
	}
	return le
}

func lowerIsBetter(r advise.Requirement) bool { return strings.HasPrefix(r.Op, "<") }

// Name is the comparison in a few words.
func (c Comparison) Name() string {
	if c.Kind == PairKind {
		return c.A + " vs " + c.B + " on " + c.Requirement.Metric
	}
	return c.Stack + ": " + c.Requirement.String()
}

// differences are, per repetition, the A stack's value minus B's (a
// pair) or the stack's value minus the bound (a requirement). A value
// beyond any bound (a percentile that fell among messages that never
// completed: +Inf) stands as ten times the largest finite value at the
// point (or the bound): worse than anything measured, so that it counts
// against its stack instead of dropping out of the evidence; two of them
// are a tie (NaN, left out).
func (c Comparison) differences(reps []map[string]map[string]float64) []float64 {
	m := c.Requirement.Metric
	worst := math.Max(1, math.Abs(c.Requirement.Bound))
	for _, r := range reps {
		for _, vals := range r {
			if v := vals[m]; !math.IsInf(v, 0) && !math.IsNaN(v) {
				worst = math.Max(worst, math.Abs(v))
			}
		}
	}
	val := func(v float64) float64 {
		switch {
		case math.IsInf(v, 1):
			return 10 * worst
		case math.IsInf(v, -1):
			return -10 * worst
		}
		return v
	}
	var d []float64
	for _, r := range reps {
		a, b := val(r[c.Stack][m]), c.Requirement.Bound
		if c.Kind == PairKind {
			a, b = val(r[c.A][m]), val(r[c.B][m])
			if math.IsInf(r[c.A][m], 0) && math.IsInf(r[c.B][m], 0) {
				d = append(d, math.NaN())
				continue
			}
		}
		d = append(d, a-b)
	}
	return d
}

// Undecided is the label of a comparison the data do not decide.
const Undecided = "undecided"

// label is the verdict the evidence's sign gives: the better stack's
// name for a pair, meets or fails for a requirement.
func (c Comparison) label(sign int) string {
	positiveIsHigh := sign > 0
	if c.Kind == PairKind {
		if positiveIsHigh == lowerIsBetter(c.Requirement) {
			return c.B
		}
		return c.A
	}
	above := positiveIsHigh
	if above == lowerIsBetter(c.Requirement) {
		return string(advise.Fails)
	}
	return string(advise.Meets)
}

// Says puts a verdict in words ("quic's delay_p99_ms is lower than
// tcp's", "quic meets delay_p99_ms <= 20").
func (c Comparison) Says(label string) string {
	if label == Undecided {
		return c.Name() + " undecided"
	}
	if c.Kind == PairKind {
		other := c.B
		if label == c.B {
			other = c.A
		}
		word := "higher"
		if lowerIsBetter(c.Requirement) {
			word = "lower"
		}
		return fmt.Sprintf("%s's %s is %s than %s's", label, c.Requirement.Metric, word, other)
	}
	return c.Stack + " " + label + " " + c.Requirement.String()
}

// Judge decides the comparison from repetitions (each stack's figures by
// metric, one map per repetition) by the rule, at level alpha shared
// among tests (Bonferroni). The rule's evidence is the running maximum
// over every look from the second repetition on: its guarantee holds for
// the whole sequence, so a verdict reached at an earlier look stands.
func (c Comparison) Judge(reps []map[string]map[string]float64, rule Rule, alpha float64, tests int) Verdict {
	d := c.differences(reps)
	var e Evidence
	for n := 2; n <= len(d); n++ {
		e.observe(c.LogE(rule, d[:n]), d[:n])
	}
	v := Verdict{Label: Undecided, P: e.P(tests), Effect: finiteMean(d), N: len(d)}
	if e.Decided(alpha, tests) {
		v.Label = c.label(e.Sign)
	}
	return v
}

// Comparisons are the questions asked at every point: every requirement
// for every stack, then every pair of stacks on the first requirement's
// metric.
func Comparisons(stacks []string, reqs []advise.Requirement) []Comparison {
	return comparisons(stacks, reqs)
}

// comparisons are every requirement for every stack, then every pair of
// stacks on the priority metric.
func comparisons(stacks []string, reqs []advise.Requirement) []Comparison {
	var out []Comparison
	for _, r := range reqs {
		var bounds []float64
		if m, ok := metrics.Lookup(r.Metric); ok && len(m.Bounds) == 2 {
			bounds = slices.Clone(m.Bounds)
			if math.IsInf(m.Bounds[1], 1) {
				bounds = bounds[:1] // a floor only
			}
		}
		for _, s := range stacks {
			out = append(out, Comparison{Kind: RequirementKind, Stack: s, Requirement: r, Range: bounds})
		}
	}
	for i := range stacks {
		for j := i + 1; j < len(stacks); j++ {
			out = append(out, Comparison{Kind: PairKind, A: stacks[i], B: stacks[j], Requirement: reqs[0]})
		}
	}
	return out
}

// Verdict is one comparison at one point: its label, the always-valid
// p-value (Bonferroni-adjusted for every test the map may make), the
// mean difference (A minus B, or value minus bound) and the repetitions.
type Verdict struct {
	Label  string  `json:"label"`
	P      float64 `json:"p"`
	Effect float64 `json:"effect"`
	N      int     `json:"repetitions"`
}

// PointResult is a measured point.
type PointResult struct {
	Point
	Reps     []map[string]map[string]float64 `json:"-"`
	Verdicts []Verdict
	// Settled: every comparison is decided, or the point had its most
	// repetitions.
	Settled bool
	// Meets are the stacks decided to meet every requirement; Best the
	// one among them decided better than every other stack ("" if none).
	Meets []string
	Best  string
	// Floors are, per comparison, the least value of the requirement's
	// metric at the point for its stack (Config.Floor; NaN: none, and for
	// pairs): a verdict the floor decides is the floor's (floor.go).
	Floors []float64 `json:"-"`
	// decided counts the stacks' statuses decided so far, gained the
	// repetitions when that count last rose (the monotone search parks
	// a point that stops gaining: monotone.go).
	decided, gained int
}

func (p *PointResult) key() string {
	var parts []string
	for _, v := range p.Verdicts {
		parts = append(parts, v.Label)
	}
	return strings.Join(parts, "|")
}

// Boundary is where a comparison's decided verdict changes along one
// parameter (Axis), between two measured points whose verdicts are
// decided and differ: Low and High bracket it, Estimate is where the
// mean difference, interpolated between them, crosses zero. At is the
// other parameter's value in two dimensions (NaN in one).
type Boundary struct {
	Comparison int
	Axis       int
	At         float64
	Low, High  float64
	Estimate   float64
	Below      string
	Above      string
	// Accounts are the records' own account on either side: each
	// evidence figure's mean over the bracketing points' repetitions,
	// per stack.
	Accounts []Account
}

// Account is one evidence figure's mean at one side of a boundary (the
// bracketing point At) for one stack.
type Account struct {
	Side   string // "below" or "above"
	At     float64
	Stack  string
	Figure string
	Mean   float64
}

// Region is a part of the range the search left open, and why.
type Region struct {
	Low, High []float64
	Why       string
}

// Map is the search's result.
type Map struct {
	Params      []Param
	Stacks      []string
	Comparisons []Comparison
	Points      []*PointResult
	Boundaries  []Boundary
	Open        []Region
	// Cells is what the search spent (stacks × repetitions, over
	// points); GridPoints the points of the full grid at the search's
	// finest resolution.
	Cells, GridPoints, Rounds int
	// Stopped says why the search ended: "decided", "budget" or
	// "points" (MaxPoints reached with regions still open).
	Stopped string
	// Alpha is the family-wise error over the map and its ablations;
	// the map's verdicts are judged at MapAlpha() shared among Tests,
	// the decisions the map reports (Shares: each requirement verdict at
	// each of MaxPoints points, and each point's best, whose share its
	// pairs split).
	Alpha    float64
	WhyShare float64
	Tests    int
	Rule     Rule
	MaxReps  int
	// Why, when the boundaries were ablated (Explain), is what each
	// removal did to them.
	Why *Explanation
	// Monotone are the search's directions (Config.Monotone); Lattice,
	// when any is set, is what the map says at every point of the
	// finest grid, measured or inferred.
	Monotone []int
	Lattice  []LatticePoint
}

// DefaultWhyShare is the part of alpha an exploration that explains its
// boundaries keeps for the ablations: a fifth (the map keeps 0.04 of 0.05).
const DefaultWhyShare = 0.2

// MapAlpha is the error rate the map's own verdicts share among Tests.
func (m *Map) MapAlpha() float64 { return m.Alpha * (1 - m.WhyShare) }

// WhyAlpha is the error rate the ablations' verdicts share among theirs.
func (m *Map) WhyAlpha() float64 { return m.Alpha * m.WhyShare }

// search is the state of one Run.
type search struct {
	cfg    Config
	comps  []Comparison
	n      [2]int // finest intervals per axis (0 for an absent second)
	strd   [2]int // lattice steps between coarse points, per axis
	points map[[2]int]*PointResult
	order  []*PointResult
	// squares are the 2-D search's leaf squares: corner and side in
	// lattice steps.
	squares []square
	tests   int
	// starved: the monotone search left open points for want of
	// MaxPoints; exhausted: it has no point left to pick; park: the
	// repetitions after which a point that gains no decision yields its
	// place (monotone.go).
	starved, exhausted bool
	park               int
	// floors caches floorsAt's answer per lattice point.
	floors map[[2]int][]float64
}

type square struct {
	x, side [2]int
}

// Run searches the range and returns its map; the measurer's error
// stops it (with the map so far).
func Run(ctx context.Context, cfg Config, m Measurer) (*Map, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &search{cfg: cfg, comps: comparisons(cfg.Stacks, cfg.Require), points: map[[2]int]*PointResult{}}
	s.tests = cfg.MaxPoints * slices.Min(Shares(s.comps))
	for i, p := range cfg.Params {
		d := p.depth(cfg.Coarse)
		s.strd[i] = 1 << d
		s.n[i] = cfg.Coarse << d
	}
	if len(s.cfg.Monotone) != len(cfg.Params) {
		s.cfg.Monotone = make([]int, len(cfg.Params))
	}
	if !s.monotone() {
		s.seed()
	} else {
		s.park = s.fewestToDecide() + 1
	}
	start := cfg.Now()
	spent, rounds := 0, 0
	stopped := "decided"
	for {
		if err := ctx.Err(); err != nil {
			return s.result(spent, rounds, "cancelled"), err
		}
		if s.monotone() {
			s.starved = s.grow()
		}
		reqs := s.plan()
		if len(reqs) == 0 {
			if s.refine() {
				continue
			}
			if s.wouldRefine() {
				stopped = "points"
			}
			break
		}
		per := len(cfg.Stacks)
		if b := cfg.Budget.Cells; b > 0 {
			left := (b - spent) / per
			if left <= 0 {
				stopped = "budget"
				break
			}
			reqs = reqs[:min(len(reqs), left)]
		}
		if d := cfg.Budget.Duration; d > 0 {
			elapsed := cfg.Now().Sub(start)
			if elapsed >= d {
				stopped = "budget"
				break
			}
			if spent > 0 {
				perCell := elapsed / time.Duration(spent)
				if left := int((d - elapsed) / (perCell * time.Duration(per))); left < len(reqs) {
					if left <= 0 {
						stopped = "budget"
						break
					}
					reqs = reqs[:left]
				}
			}
		}
		rounds++
		if cfg.Round != nil {
			cfg.Round(rounds, reqs)
		}
		outs, err := m.Measure(ctx, reqs)
		spent += len(outs) * per
		for _, o := range outs {
			if p := s.points[o.Point.Index]; p != nil && o.Rep == len(p.Reps)+1 {
				p.Reps = append(p.Reps, o.Values)
			}
		}
		for _, p := range s.order {
			s.judge(p)
		}
		if s.monotone() {
			s.settleByInference()
		}
		if err != nil {
			return s.result(spent, rounds, "failed"), fmt.Errorf("explore: round %d: %w", rounds, err)
		}
		if len(outs) < len(reqs) {
			return s.result(spent, rounds, "failed"), fmt.Errorf("explore: round %d: %d of %d repetitions came back", rounds, len(outs), len(reqs))
		}
		// New points where settled neighbours disagree join the next
		// round beside the points still repeating.
		s.refine()
		if cfg.AfterRound != nil {
			cfg.AfterRound(s.result(spent, rounds, "running"))
		}
	}
	return s.result(spent, rounds, stopped), nil
}

// seed places the coarse grid.
func (s *search) seed() {
	c := s.cfg.Coarse
	ys := []int{0}
	if len(s.cfg.Params) == 2 {
		ys = nil
		for j := 0; j <= c; j++ {
			ys = append(ys, j*s.strd[1])
		}
	}
	for _, y := range ys {
		for i := 0; i <= c; i++ {
			s.add([2]int{i * s.strd[0], y})
		}
	}
	if len(s.cfg.Params) == 2 {
		for i := 0; i < c; i++ {
			for j := 0; j < c; j++ {
				s.squares = append(s.squares, square{x: [2]int{i * s.strd[0], j * s.strd[1]}, side: s.strd})
			}
		}
	}
}

// add places a point (once) and says whether it is new.
func (s *search) add(idx [2]int) bool {
	if s.points[idx] != nil {
		return false
	}
	pr := &PointResult{Point: s.pointAt(idx)}
	for range s.comps {
		pr.Verdicts = append(pr.Verdicts, Verdict{Label: Undecided, P: 1, Effect: math.NaN()})
	}
	s.points[idx] = pr
	s.order = append(s.order, pr)
	// What the floors decide is decided before any repetition: a point
	// they settle is never measured.
	s.judge(pr)
	return true
}

// pointAt is the lattice point idx with its values and settings.
func (s *search) pointAt(idx [2]int) Point {
	pt := Point{Index: idx}
	for i, p := range s.cfg.Params {
		v := p.At(float64(idx[i]) / float64(s.n[i]))
		pt.Values = append(pt.Values, v)
		pt.Settings = append(pt.Settings, Setting{Path: p.Path, Value: p.Format(v)})
	}
	return pt
}

// plan is the next round: every unsettled point's next repetitions (up
// to MinReps for a new one, one more for the others), oldest first.
func (s *search) plan() []Request {
	var reqs []Request
	for _, p := range s.order {
		if p.Settled || s.parked(p) && !s.exhausted && !s.starved {
			continue
		}
		want := max(s.cfg.MinReps, len(p.Reps)+1)
		for r := len(p.Reps) + 1; r <= want; r++ {
			reqs = append(reqs, Request{Point: p.Point, Rep: r})
		}
	}
	return reqs
}

// judge decides a point's comparisons from its repetitions so far.
func (s *search) judge(p *PointResult) {
	shares := Shares(s.comps)
	p.Floors = s.floorsAt(p.Index)
	for i, c := range s.comps {
		f := p.Floors[i]
		p.Verdicts[i] = c.withFloor(f).Judge(p.Reps, s.cfg.Rule, s.cfg.Alpha*(1-s.cfg.WhyShare), s.cfg.MaxPoints*shares[i])
		if label := c.byFloor(f); label != "" {
			p.Verdicts[i] = Verdict{Label: label, P: 0, Effect: p.Verdicts[i].Effect, N: len(p.Reps)}
		}
	}
	p.Settled = fixed(s.cfg.Stacks, s.comps, p.Verdicts) || len(p.Reps) >= s.cfg.MaxReps
	n := 0
	for _, st := range Statuses(s.cfg.Stacks, s.comps, p.Verdicts) {
		if st != Undecided {
			n++
		}
	}
	if n > p.decided {
		p.decided, p.gained = n, len(p.Reps)
	}
	p.Meets, p.Best = Standing(s.cfg.Stacks, s.comps, p.Verdicts)
}

// Standing reads a point's verdicts (one per comparison, in the order of
// comps) as the map says them: the stacks decided to meet every
// requirement, and among them the one decided better than every other
// stack still in the running ("" if none). A stack decided to fail a
// requirement is out of the running: the application cannot use it,
// whatever its value of the priority metric, so the best needs no pair
// against it (a pair among failing stacks, 100 % against 100 % missed,
// may never decide and need not).
func Standing(stacks []string, comps []Comparison, verdicts []Verdict) (meets []string, best string) {
	status := Statuses(stacks, comps, verdicts)
	for i, st := range stacks {
		if status[i] == string(advise.Meets) {
			meets = append(meets, st)
		}
	}
	for _, st := range meets {
		ok := true
		for i, c := range comps {
			if c.Kind != PairKind || (c.A != st && c.B != st) {
				continue
			}
			other := c.A
			if other == st {
				other = c.B
			}
			if status[slices.Index(stacks, other)] != string(advise.Fails) && verdicts[i].Label != st {
				ok = false
			}
		}
		if ok {
			best = st
		}
	}
	return meets, best
}

// Statuses are each stack's status against the requirements (in the
// order of stacks): fails once one requirement is decided failed, meets
// once every one is decided met, else undecided.
func Statuses(stacks []string, comps []Comparison, verdicts []Verdict) []string {
	var out []string
	for _, st := range stacks {
		status := string(advise.Meets)
		for i, c := range comps {
			if c.Kind != RequirementKind || c.Stack != st {
				continue
			}
			switch l := verdicts[i].Label; {
			case l == string(advise.Fails):
				status = string(advise.Fails)
			case l == Undecided && status == string(advise.Meets):
				status = Undecided
			}
		}
		out = append(out, status)
	}
	return out
}

// fixed says whether what the map reports at a point can no longer
// change with more repetitions: every stack's status is decided, and
// the best is decided, or none meets (the best is None), or every pair
// among the stacks that meet is decided. Pairs of failing stacks and
// requirements left open beside a decided failure change nothing the map
// says, so a point stops there instead of repeating until they decide.
func fixed(stacks []string, comps []Comparison, verdicts []Verdict) bool {
	status := Statuses(stacks, comps, verdicts)
	if slices.Contains(status, Undecided) {
		return false
	}
	_, best := Standing(stacks, comps, verdicts)
	if best != "" {
		return true
	}
	// With no stack meeting, no pair below is among meeting stacks: the
	// best is None.
	for i, c := range comps {
		if c.Kind == PairKind && verdicts[i].Label == Undecided &&
			status[slices.Index(stacks, c.A)] == string(advise.Meets) && status[slices.Index(stacks, c.B)] == string(advise.Meets) {
			return false
		}
	}
	return true
}

// Shares are the Bonferroni divisors of each comparison's level at one
// point, over the decisions the map reports there: each requirement
// verdict is one, and the best stack is one more (with two stacks or
// more), its share split evenly among the pairs that decide it. Over a
// point the shares sum to one (r requirement verdicts and one best: r/(r+1)
// + p·1/((r+1)p) = 1), so alpha over points·(r+1) reported decisions
// holds the map's family-wise error, and a requirement's verdict is not
// charged for the pairs (study A's four stacks: 5 decisions a point, not
// 4 + 6 = 10 comparisons).
func Shares(comps []Comparison) []int {
	reqs, pairs := 0, 0
	for _, c := range comps {
		if c.Kind == PairKind {
			pairs++
		} else {
			reqs++
		}
	}
	decisions := reqs
	if pairs > 0 {
		decisions++
	}
	out := make([]int, len(comps))
	for i, c := range comps {
		out[i] = decisions
		if c.Kind == PairKind {
			out[i] = decisions * pairs
		}
	}
	return out
}

// refine adds points where settled neighbours disagree, within
// MaxPoints, and says whether it added any: in one dimension the
// midpoint of each gap whose settled ends disagree (bisection), in two
// the centre and side midpoints of each square whose settled corners
// disagree (the square is split in four).
func (s *search) refine() bool {
	if s.monotone() && len(s.cfg.Params) == 2 {
		return false // grow picks the points
	}
	added := false
	if len(s.cfg.Params) == 1 {
		for _, idx := range s.gaps() {
			if len(s.order) >= s.cfg.MaxPoints {
				break
			}
			added = s.add(idx) || added
		}
		return added
	}
	var next []square
	for _, q := range s.squares {
		axes := s.splits(q)
		if axes == [2]bool{} {
			next = append(next, q)
			continue
		}
		mids := q.midpoints(axes)
		fresh := 0
		for _, m := range mids {
			if s.points[m] == nil {
				fresh++
			}
		}
		if len(s.order)+fresh > s.cfg.MaxPoints {
			next = append(next, q)
			continue
		}
		for _, m := range mids {
			added = s.add(m) || added
		}
		next = append(next, q.children(axes)...)
	}
	s.squares = next
	return added
}

// wouldRefine says whether disagreements were left unrefined (the
// points ran out).
func (s *search) wouldRefine() bool {
	if s.monotone() && (s.starved || len(s.cfg.Params) == 2) {
		return s.starved
	}
	if len(s.cfg.Params) == 1 {
		return len(s.gaps()) > 0
	}
	return slices.ContainsFunc(s.squares, func(q square) bool { return s.splits(q) != [2]bool{} })
}

// gaps are the midpoints of the 1-D gaps wider than one lattice step
// whose settled ends disagree.
func (s *search) gaps() [][2]int {
	var out [][2]int
	line := s.sorted(func(*PointResult) bool { return true }, 0)
	for i := 0; i+1 < len(line); i++ {
		a, b := line[i], line[i+1]
		if b.Index[0]-a.Index[0] > 1 && a.Settled && b.Settled && a.key() != b.key() {
			out = append(out, [2]int{(a.Index[0] + b.Index[0]) / 2, 0})
		}
	}
	return out
}

// splits says along which axes a rectangle is divided: along x when its
// settled corners disagree across x (left against right), along y when
// they disagree across y, each only while the side is wider than one
// lattice step. A flip that runs along one axis divides the rectangles
// across it only, so the points go where the verdict changes.
func (s *search) splits(q square) [2]bool {
	var keys [4]string
	for i, c := range q.corners() {
		p := s.points[c]
		if p == nil || !p.Settled {
			return [2]bool{}
		}
		keys[i] = p.key()
	}
	// corners: (x0,y0), (x1,y0), (x0,y1), (x1,y1)
	return [2]bool{
		q.side[0] >= 2 && (keys[0] != keys[1] || keys[2] != keys[3]),
		q.side[1] >= 2 && (keys[0] != keys[2] || keys[1] != keys[3]),
	}
}

// midpoints are the lattice points a division along axes adds (with
// the corners, which exist already).
func (q square) midpoints(axes [2]bool) [][2]int {
	x, y := q.x[0], q.x[1]
	xs := []int{x, x + q.side[0]}
	ys := []int{y, y + q.side[1]}
	if axes[0] {
		xs = []int{x, x + q.side[0]/2, x + q.side[0]}
	}
	if axes[1] {
		ys = []int{y, y + q.side[1]/2, y + q.side[1]}
	}
	var out [][2]int
	for _, yy := range ys {
		for _, xx := range xs {
			out = append(out, [2]int{xx, yy})
		}
	}
	return out
}

// children are the rectangles a division along axes leaves.
func (q square) children(axes [2]bool) []square {
	parts := func(lo, side int, split bool) [][2]int {
		if split {
			return [][2]int{{lo, side / 2}, {lo + side/2, side - side/2}}
		}
		return [][2]int{{lo, side}}
	}
	var out []square
	for _, py := range parts(q.x[1], q.side[1], axes[1]) {
		for _, px := range parts(q.x[0], q.side[0], axes[0]) {
			out = append(out, square{x: [2]int{px[0], py[0]}, side: [2]int{px[1], py[1]}})
		}
	}
	return out
}

// sorted are the points keep selects, ordered along axis.
func (s *search) sorted(keep func(*PointResult) bool, axis int) []*PointResult {
	var out []*PointResult
	for _, p := range s.order {
		if keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *PointResult) int { return a.Index[axis] - b.Index[axis] })
	return out
}

// corners are a rectangle's: (x0,y0), (x1,y0), (x0,y1), (x1,y1).
func (q square) corners() [][2]int {
	x, y := q.x[0], q.x[1]
	return [][2]int{{x, y}, {x + q.side[0], y}, {x, y + q.side[1]}, {x + q.side[0], y + q.side[1]}}
}
