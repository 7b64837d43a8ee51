// Package advise turns a run's results into the answer to tlab's question:
// which stack meets the application's requirements on this network, with
// how much margin and how sure, which fail and on which requirement, and,
// where the data cannot decide, what to run to decide.
package advise

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// Requirement is a bound on a registered metric: "delay_p99_ms<=20".
type Requirement struct {
	Metric string  `json:"metric"`
	Op     string  `json:"op"`
	Bound  float64 `json:"bound"`
}

func (r Requirement) String() string {
	return r.Metric + " " + r.Op + " " + strconv.FormatFloat(r.Bound, 'g', -1, 64)
}

var requirementRE = regexp.MustCompile(`^\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*([a-zA-Z%µ]*)\s*$`)

// Parse reads a requirement; unit gives a metric's unit and whether it is
// registered, so that a typo or a unit that is not the metric's is an
// error that says which.
func Parse(s string, unit func(metric string) (string, bool)) (Requirement, error) {
	m := requirementRE.FindStringSubmatch(s)
	if m == nil {
		return Requirement{}, fmt.Errorf("requirement %q: want METRIC OP BOUND, such as delay_p99_ms<=20 (OP one of <=, <, >=, >)", s)
	}
	u, ok := unit(m[1])
	if !ok {
		return Requirement{}, fmt.Errorf("requirement %q: no metric %q (tlab metrics lists them)", s, m[1])
	}
	bound, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Requirement{}, fmt.Errorf("requirement %q: bound %q is not a number", s, m[3])
	}
	if m[4] != "" && m[4] != u {
		return Requirement{}, fmt.Errorf("requirement %q: %s is in %q, not %q", s, m[1], u, m[4])
	}
	return Requirement{Metric: m[1], Op: m[2], Bound: bound}, nil
}

// ParseRegistered reads a requirement on a metric of tlab's registry.
func ParseRegistered(s string) (Requirement, error) {
	return Parse(s, func(name string) (string, bool) {
		m, ok := metrics.Lookup(name)
		return m.Unit, ok
	})
}

// ParseAll reads requirements against the registry, in order.
func ParseAll(texts []string) ([]Requirement, error) {
	var out []Requirement
	for _, t := range texts {
		r, err := ParseRegistered(t)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Holds tells whether v satisfies the requirement.
func (r Requirement) Holds(v float64) bool {
	switch r.Op {
	case "<=":
		return v <= r.Bound
	case "<":
		return v < r.Bound
	case ">=":
		return v >= r.Bound
	}
	return v > r.Bound
}

// lowerIsBetter tells which way the requirement points.
func (r Requirement) lowerIsBetter() bool { return strings.HasPrefix(r.Op, "<") }

// Status is what the data say of a requirement or a stack.
type Status string

const (
	Meets     Status = "meets"
	Fails     Status = "fails"
	Undecided Status = "undecided"
)

// Check is one requirement for one stack: the value (the mean over the
// repetitions), its 95 % interval (Student's t over the repetitions; none
// with fewer than MinRepetitions), its margin to the bound (positive:
// inside), and the status. Added marks a check the answer added itself:
// failed_pct<=0 beside a requirement that cannot see failed messages.
type Check struct {
	Requirement Requirement `json:"requirement"`
	Value       float64     `json:"value"`
	Low         float64     `json:"ci_low"`
	High        float64     `json:"ci_high"`
	Margin      float64     `json:"margin"`
	N           int         `json:"repetitions"`
	Status      Status      `json:"status"`
	Why         string      `json:"why,omitempty"`
	Added       bool        `json:"added,omitempty"`
}

// MarshalJSON writes what could not be computed (no interval with one
// repetition, a metric the run lacks) as null: JSON has no NaN.
func (c Check) MarshalJSON() ([]byte, error) {
	orNull := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	type plain Check
	return json.Marshal(struct {
		plain
		Value  *float64 `json:"value"`
		Low    *float64 `json:"ci_low"`
		High   *float64 `json:"ci_high"`
		Margin *float64 `json:"margin"`
	}{plain(c), orNull(c.Value), orNull(c.Low), orNull(c.High), orNull(c.Margin)})
}

// Stack is one protocol on one network: every requirement's check, and
// beside them the share of its messages that never completed (the mean
// of its repetitions' failed_pct; NaN when the run has none).
type Stack struct {
	Protocol  string  `json:"protocol"`
	Status    Status  `json:"status"`
	Checks    []Check `json:"checks"`
	FailedPct float64 `json:"failed_pct"`
	// QoO is the stack's Quality of Outcome against a requirement
	// profile, when one was asked for (WithQoO).
	QoO *Outcome `json:"qoo,omitempty"`
	// Disturbed are its cells the host disturbed or that failed, each
	// with the run's reason (the summary's quality or cell_error), of
	// Cells; a check they leave undecided says so.
	Disturbed []string `json:"disturbed,omitempty"`
	Cells     int      `json:"cells,omitempty"`
}

// MarshalJSON writes a FailedPct the run lacks as null.
func (s Stack) MarshalJSON() ([]byte, error) {
	type plain Stack
	var failed *float64
	if !math.IsNaN(s.FailedPct) {
		failed = &s.FailedPct
	}
	return json.Marshal(struct {
		plain
		FailedPct *float64 `json:"failed_pct"`
	}{plain(s), failed})
}

// FailedMetric is the share of messages that never completed: every
// workload reports it, and a requirement on a figure that cannot see
// them (metrics.Metric.OverCompleted) brings it into the answer.
const FailedMetric = "failed_pct"

// withFailures returns reqs with failed_pct<=0 added (at index added)
// when a requirement is on a figure computed over completed messages only
// (blind names it) and none bounds failed_pct already: a mean delay over
// the requests that came back says nothing of those that did not. added
// is -1 when nothing was added.
func withFailures(reqs []Requirement) (out []Requirement, added int, blind string) {
	for _, r := range reqs {
		if r.Metric == FailedMetric {
			return reqs, -1, ""
		}
		if m, ok := metrics.Lookup(r.Metric); ok && m.OverCompleted && blind == "" {
			blind = r.Metric
		}
	}
	if blind == "" {
		return reqs, -1, ""
	}
	return append(slices.Clone(reqs), Requirement{Metric: FailedMetric, Op: "<=", Bound: 0}), len(reqs), blind
}

// Answer is the answer for one network (and set of swept values).
type Answer struct {
	Profile string  `json:"profile"`
	Params  string  `json:"params,omitempty"`
	Stacks  []Stack `json:"stacks"`
	// Best is the stack that meets every requirement with the best value
	// of the first one (the priority); Tie names others it cannot be told
	// from (their intervals overlap).
	Best string   `json:"best,omitempty"`
	Tie  []string `json:"tie,omitempty"`
	// Summary says the answer in a sentence; ToDecide what to run when
	// the data cannot decide.
	Summary  string `json:"summary"`
	ToDecide string `json:"to_decide,omitempty"`
}

// MinRepetitions is how many repetitions give a value an interval.
const MinRepetitions = 3

// decideMargin is how far (relative to the bound) a value without an
// interval must be from the bound to decide.
const decideMargin = 0.10

// Evaluate answers reqs on each network and set of swept values of rows.
func Evaluate(rows []results.Summary, reqs []Requirement) ([]Answer, error) {
	if len(reqs) == 0 {
		return nil, errors.New("no requirement: give at least one, such as delay_p99_ms<=20")
	}
	type key struct{ profile, params string }
	var order []key
	groups := map[key]map[string][]results.Summary{}
	protoOrder := map[key][]string{}
	for _, r := range rows {
		k := key{r.Profile, paramsOf(r)}
		if groups[k] == nil {
			groups[k] = map[string][]results.Summary{}
			order = append(order, k)
		}
		if groups[k][r.Protocol] == nil {
			protoOrder[k] = append(protoOrder[k], r.Protocol)
		}
		groups[k][r.Protocol] = append(groups[k][r.Protocol], r)
	}
	checked, added, blind := withFailures(reqs)
	var out []Answer
	for _, k := range order {
		a := Answer{Profile: k.profile, Params: k.params}
		for _, p := range protoOrder[k] {
			a.Stacks = append(a.Stacks, evaluateStack(p, groups[k][p], checked, added, blind))
		}
		a.decide(reqs[0])
		out = append(out, a)
	}
	return out, nil
}

// evaluateStack checks one stack's rows against reqs, of which the one
// at added (if any) is the failed_pct<=0 that the requirement on blind
// brought.
func evaluateStack(protocol string, rows []results.Summary, reqs []Requirement, added int, blind string) Stack {
	s := Stack{Protocol: protocol, Status: Meets, FailedPct: meanOf(rows, FailedMetric), Cells: len(rows)}
	for _, r := range rows {
		switch q, e := r.Label("quality"), r.Label("cell_error"); {
		case strings.HasPrefix(q, "disturbed"):
			s.Disturbed = append(s.Disturbed, strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(q, "disturbed"), ":")))
		case e != "":
			s.Disturbed = append(s.Disturbed, "the cell failed: "+e)
		}
	}
	disturbed := len(s.Disturbed) > 0
	for i, req := range reqs {
		c := Check{Requirement: req, Low: math.NaN(), High: math.NaN(), Added: i == added}
		var v []float64
		unbounded := 0
		for _, r := range rows {
			if x := r.Float(req.Metric); !math.IsNaN(x) {
				v = append(v, x)
				if math.IsInf(x, 1) {
					unbounded++
				}
			}
		}
		c.N = len(v)
		switch {
		case len(v) == 0:
			c.Value, c.Status, c.Why = math.NaN(), Undecided, "not measured in this run"
		case unbounded > 0 && req.lowerIsBetter():
			// A percentile that fell among messages that never came back:
			// in that repetition the application waited for ever.
			c.Value, c.Margin, c.Status = math.Inf(1), math.Inf(-1), Fails
			c.Why = fmt.Sprintf("beyond any bound in %d of %s: more messages never completed than the percentile allows", unbounded, repetitions(len(v)))
		case i == added:
			c.Value = meanOf(rows, req.Metric)
			c.Margin = -c.Value
			if c.Status = Meets; !req.Holds(c.Value) {
				c.Status = Fails
				c.Why = fmt.Sprintf("messages never completed, which %s (computed over completed messages only) cannot see: bound failed_pct yourself to allow some", blind)
			}
		default:
			var sum float64
			for _, x := range v {
				sum += x
			}
			c.Value = sum / float64(len(v))
			c.Margin = c.Value - req.Bound
			if req.lowerIsBetter() {
				c.Margin = -c.Margin
			}
			c.Status, c.Why = judge(req, c.Value, v, &c)
		}
		if disturbed && c.Status != Fails {
			c.Status, c.Why = Undecided, DisturbedWhy
		}
		s.Checks = append(s.Checks, c)
		switch {
		case c.Status == Fails:
			s.Status = Fails
		case c.Status == Undecided && s.Status == Meets:
			s.Status = Undecided
		}
	}
	return s
}

// judge decides one requirement from its repetitions' values.
func judge(req Requirement, mean float64, v []float64, c *Check) (Status, string) {
	if len(v) >= MinRepetitions {
		c.Low, c.High = stats.MeanInterval(v, 0.95)
		switch lo, hi := req.Holds(c.Low), req.Holds(c.High); {
		case lo && hi:
			return Meets, ""
		case !lo && !hi:
			return Fails, ""
		}
		return Undecided, "its 95 % interval straddles the bound: more repetitions narrow it"
	}
	// Without an interval, only a clear margin decides.
	scale := math.Max(math.Abs(req.Bound), 1e-9)
	if math.Abs(mean-req.Bound)/scale < decideMargin {
		return Undecided, fmt.Sprintf("within %.0f %% of the bound with %s: at least %d give an interval", decideMargin*100, repetitions(len(v)), MinRepetitions)
	}
	if req.Holds(mean) {
		return Meets, "by a clear margin, from " + repetitions(len(v))
	}
	return Fails, ""
}

// decide picks the best stack among those that meet every requirement,
// by the priority requirement, and says the answer.
func (a *Answer) decide(priority Requirement) {
	var meet, undecided []Stack
	for _, s := range a.Stacks {
		switch s.Status {
		case Meets:
			meet = append(meet, s)
		case Undecided:
			undecided = append(undecided, s)
		}
	}
	better := func(x, y Stack) int {
		vx, vy := x.Checks[0].Value, y.Checks[0].Value
		if !priority.lowerIsBetter() {
			vx, vy = -vx, -vy
		}
		return cmpFloat(vx, vy)
	}
	slices.SortStableFunc(meet, better)
	switch {
	case len(meet) > 0:
		a.Best = meet[0].Protocol
		b := meet[0].Checks[0]
		for _, s := range meet[1:] {
			c := s.Checks[0]
			if overlap(b, c) {
				a.Tie = append(a.Tie, s.Protocol)
			}
		}
		a.Summary = fmt.Sprintf("%s meets every requirement, best by %s (%s)", a.Best, priority.Metric, formatValue(b))
		if math.IsNaN(b.Low) && len(meet) > 1+len(a.Tie) {
			// Without an interval a ranking can rest on noise (one
			// missed request of 480 against none): say so.
			a.Summary += fmt.Sprintf(", a ranking from %s without an interval: a small difference may be noise", repetitions(b.N))
		}
		if len(a.Tie) > 0 {
			a.Summary += fmt.Sprintf("; %s cannot be told from it (overlapping intervals, or within 10 %% with fewer than %d repetitions)", strings.Join(a.Tie, ", "), MinRepetitions)
		}
		if len(meet) > 1+len(a.Tie) {
			var others []string
			for _, s := range meet[1:] {
				if !slices.Contains(a.Tie, s.Protocol) {
					others = append(others, s.Protocol)
				}
			}
			a.Summary += "; also meeting them: " + strings.Join(others, ", ")
		}
	case len(undecided) > 0:
		names := make([]string, 0, len(undecided))
		for _, s := range undecided {
			names = append(names, s.Protocol)
		}
		a.Summary = "no stack is known to meet every requirement; undecided: " + strings.Join(names, ", ")
	default:
		a.Summary = "no stack meets every requirement"
	}
	if len(undecided) > 0 {
		a.ToDecide = toDecide(undecided)
	}
}

// DisturbedWhy is the reason of a check a disturbed or failed cell left
// undecided.
const DisturbedWhy = "a cell was disturbed by the host or failed: run it again on a quieter host"

// toDecide says what would decide the undecided stacks: when the host's
// disturbance is what keeps a verdict open, that (more repetitions on the
// same host meet it again), with the quality rule's own figures; else
// more repetitions.
func toDecide(undecided []Stack) string {
	var names, reasons []string
	disturbedCells, cells := 0, 0
	statistical := false
	for _, s := range undecided {
		byHost := false
		for _, c := range s.Checks {
			switch {
			case c.Status != Undecided:
			case c.Why == DisturbedWhy:
				byHost = true
			default:
				statistical = true
			}
		}
		if byHost {
			names = append(names, s.Protocol)
			disturbedCells += len(s.Disturbed)
			cells += s.Cells
			reasons = append(reasons, s.Disturbed...)
		}
	}
	// Both remedies: a run with repetitions: auto already repeated until
	// its cap, where a fixed count would not help.
	more := fmt.Sprintf("more repetitions (--set repetitions=%d; with repetitions: auto, a higher --set max_repetitions)", max(5, MinRepetitions))
	if len(names) == 0 {
		return "run it again on a quiet host with " + more
	}
	out := fmt.Sprintf("the host disturbed %d of the %d cells of %s (%s), which leaves them undecided whatever the repetitions: run it on a quieter host (tlab calibrate shows the host's timer noise)",
		disturbedCells, cells, strings.Join(names, ", "), describeDisturbance(reasons))
	if statistical {
		out += ", with " + more
	}
	return out
}

// releaseRE reads the quality rule's release-error reason (package
// experiment's Quality.Disturbance writes it).
var releaseRE = regexp.MustCompile(`emulator release error p99 ([0-9.]+) ms is over ([0-9.]+) % of the median delay ([0-9.]+) ms`)

// describeDisturbance puts the cells' reasons in a few words: the
// emulator's release error as a range against the share of the median
// delay the rule allows, and the other reasons counted.
func describeDisturbance(reasons []string) string {
	relLo, relHi, medLo, medHi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	share := ""
	others := map[string]int{}
	var order []string
	for _, r := range reasons {
		for _, part := range strings.Split(r, "; ") {
			if m := releaseRE.FindStringSubmatch(part); m != nil {
				rel, _ := strconv.ParseFloat(m[1], 64)
				med, _ := strconv.ParseFloat(m[3], 64)
				relLo, relHi = math.Min(relLo, rel), math.Max(relHi, rel)
				medLo, medHi = math.Min(medLo, med), math.Max(medHi, med)
				share = m[2]
				continue
			}
			// The other reasons without their figures: "the host stole
			// 12.0 % of the CPU time" counts as "the host stole CPU time".
			key := strings.TrimSpace(part)
			switch {
			case strings.HasPrefix(key, "the host stole"):
				key = "the hypervisor stole CPU time"
			case strings.HasPrefix(key, "the host stalled"):
				key = "the host stalled"
			case strings.HasPrefix(key, "the cell failed"):
				key = "cells failed"
			}
			if others[key] == 0 {
				order = append(order, key)
			}
			others[key]++
		}
	}
	var parts []string
	if share != "" {
		span := func(lo, hi float64) string {
			if hi-lo < 0.005 {
				return fmt.Sprintf("%.2f ms", lo)
			}
			return fmt.Sprintf("%.2f–%.2f ms", lo, hi)
		}
		parts = append(parts, fmt.Sprintf("the emulator's release error p99 %s against %s %% of a median delay of %s, the quality rule's limit", span(relLo, relHi), share, span(medLo, medHi)))
		if medHi < 1 {
			parts[0] += fmt.Sprintf(": at a sub-millisecond delay that limit is %.0f µs, within a busy or ordinary host's timer wake-up tail", medLo*10*atof(share))
		}
	}
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s (%d)", k, others[k]))
	}
	return strings.Join(parts, "; ")
}

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// overlap tells whether two checks cannot be told apart: their intervals
// overlap or, without intervals (too few repetitions), their values are
// within 10 % of each other.
func overlap(a, b Check) bool {
	if math.IsNaN(a.Low) || math.IsNaN(b.Low) {
		return math.Abs(a.Value-b.Value) <= decideMargin*math.Max(math.Abs(a.Value), math.Abs(b.Value))
	}
	return a.Low <= b.High && b.Low <= a.High
}

// meanOf is the mean of a metric over rows that have it (NaN if none).
func meanOf(rows []results.Summary, name string) float64 {
	sum, n := 0.0, 0
	for _, r := range rows {
		if x := r.Float(name); !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func formatValue(c Check) string {
	s := strconv.FormatFloat(c.Value, 'f', 3, 64)
	if !math.IsNaN(c.Low) {
		s += fmt.Sprintf(", 95 %% CI %.3f–%.3f", c.Low, c.High)
	}
	return s
}

// Everywhere names the stacks that meet every requirement in every
// answer (every network of a run, or every run of a comparison), in the
// order of the first answer: the stacks a user can choose without knowing
// which of those networks the application will meet.
func Everywhere(answers []Answer) []string {
	if len(answers) == 0 {
		return nil
	}
	var out []string
	for _, s := range answers[0].Stacks {
		ok := true
		for _, a := range answers {
			if !a.meets(s.Protocol) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s.Protocol)
		}
	}
	return out
}

func (a Answer) meets(protocol string) bool {
	for _, s := range a.Stacks {
		if s.Protocol == protocol {
			return s.Status == Meets
		}
	}
	return false
}

// EverywhereSentence says Everywhere in words, for answers over more than
// one network; over one it says nothing (that answer's summary says it),
// nor for answers that judged no requirement (Skeleton's, a Quality of
// Outcome alone), where "no stack meets every requirement" would be false.
func EverywhereSentence(answers []Answer) string {
	if len(answers) < 2 || !judged(answers) {
		return ""
	}
	names := Everywhere(answers)
	// "on all 2 networks" is not English; two networks are "both".
	where := fmt.Sprintf("on all %d networks", len(answers))
	if len(answers) == 2 {
		where = "on both networks"
	}
	switch len(names) {
	case 0:
		return "no stack meets every requirement " + where
	case 1:
		return names[0] + " meets every requirement " + where
	}
	return strings.Join(names, ", ") + " meet every requirement " + where
}

// judged tells whether any stack of the answers was judged against a
// requirement.
func judged(answers []Answer) bool {
	for _, a := range answers {
		for _, s := range a.Stacks {
			if s.Status != "" {
				return true
			}
		}
	}
	return false
}

// Met tells whether at least one stack meets every requirement on every
// network of the answers (tlab advise's exit 0).
func Met(answers []Answer) bool { return len(Everywhere(answers)) > 0 }

func repetitions(n int) string {
	if n == 1 {
		return "1 repetition"
	}
	return fmt.Sprintf("%d repetitions", n)
}
