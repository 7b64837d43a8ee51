package explore

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/advise"
)

// The files an exploration adds to its run directory: tidy data (one row
// per measured point and stack, one per point and comparison, one per
// boundary, one per boundary, side, stack and evidence figure), the
// map's facts and its answer in words.
const (
	PointsFile     = "explore-points.csv"
	VerdictsFile   = "explore-verdicts.csv"
	BoundariesFile = "explore-boundaries.csv"
	EvidenceFile   = "explore-evidence.csv"
	WhyFile        = "explore-why.csv"
	MapFile        = "explore.json"
	AnswerFile     = "explore-answer.txt"
)

// Facts are explore.json: what the plots and a reader need beside the
// tables.
type Facts struct {
	Parameters  []ParamFacts `json:"parameters"`
	Stacks      []string     `json:"stacks"`
	Comparisons []Comparison `json:"comparisons"`
	Points      int          `json:"points"`
	Cells       int          `json:"cells"`
	GridPoints  int          `json:"grid_points"`
	Rounds      int          `json:"rounds"`
	Stopped     string       `json:"stopped"`
	Alpha       float64      `json:"alpha"`
	// MapAlpha is the map's part of alpha, WhyAlpha the ablations'
	// (shared among WhyTests); without the why MapAlpha is alpha.
	MapAlpha   float64  `json:"map_alpha"`
	WhyAlpha   float64  `json:"why_alpha,omitempty"`
	WhyTests   int      `json:"why_tests,omitempty"`
	Tests      int      `json:"tests"`
	Rule       Rule     `json:"rule"`
	Boundaries []string `json:"boundaries"`
	Open       []string `json:"open"`
	// Why is each boundary's attribution in words (tlab explore --why).
	Why []string `json:"why,omitempty"`
}

// ParamFacts is a parameter as explore.json writes it.
type ParamFacts struct {
	Path string  `json:"path"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Unit string  `json:"unit"`
	Log  bool    `json:"log"`
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "NA"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// confidence is 1 - p, the always-valid (adjusted) p-value's complement.
func confidence(p float64) string { return num(1 - p) }

// WriteFiles writes the map's files into dir.
func (m *Map) WriteFiles(dir string) error {
	var params []string
	for _, p := range m.Params {
		params = append(params, p.Path)
	}
	withParams := func(p *PointResult, rest ...string) []string {
		row := []string{p.Label()}
		for i := range m.Params {
			row = append(row, num(p.Values[i]))
		}
		return append(row, rest...)
	}
	// One row per point and stack: does it meet every requirement (the
	// least confident of its checks), is it the best, its mean value of
	// the priority metric.
	priority := m.Comparisons[0].Requirement
	// A map that infers along monotone axes (Lattice) says, per stack,
	// how each status came about: measured, or inferred from a measured
	// point (how = inferred, with no repetitions of its own at a point
	// it did not measure); the points it did not measure and inferred
	// something at are rows too.
	// A status the point's floor decides by construction has how =
	// floor, whether the point was measured or not; the column floor is
	// the floor behind it (or the stack's first requirement's: NA
	// without one), in the requirement metric's unit.
	points := [][]string{append(append([]string{"point"}, params...), "stack", "repetitions", "status", "confidence", "best", "priority_metric", "priority_mean", "settled", "how", "floor")}
	lattice := map[[2]int]LatticePoint{}
	for _, lp := range m.Lattice {
		lattice[lp.Index] = lp
	}
	for _, p := range m.Points {
		lp, inferring := lattice[p.Index]
		floors := p.Floors
		if floors == nil {
			floors = make([]float64, len(m.Comparisons))
			for i := range floors {
				floors[i] = math.NaN()
			}
		}
		byFloor, floor := floorStatuses(m.Stacks, m.Comparisons, floors)
		for k, st := range m.Stacks {
			status, worst := string(advise.Meets), 0.0
			for ci, c := range m.Comparisons {
				if c.Kind != RequirementKind || c.Stack != st {
					continue
				}
				v := p.Verdicts[ci]
				worst = math.Max(worst, v.P)
				switch {
				case v.Label == string(advise.Fails):
					status = string(advise.Fails)
				case v.Label == Undecided && status == string(advise.Meets):
					status = Undecided
				}
			}
			if status == string(advise.Fails) {
				// Failing one requirement decidedly is enough: its own
				// confidence is the status's.
				worst = 1
				for ci, c := range m.Comparisons {
					if c.Kind == RequirementKind && c.Stack == st && p.Verdicts[ci].Label == string(advise.Fails) {
						worst = math.Min(worst, p.Verdicts[ci].P)
					}
				}
			}
			var vals []float64
			for _, r := range p.Reps {
				vals = append(vals, r[st][priority.Metric])
			}
			how, conf, best := "", confidence(worst), p.Best == st
			switch {
			case byFloor[k] != "":
				how = HowFloor
			case status != Undecided:
				how = HowMeasured
			}
			if inferring {
				if status == Undecided && lp.How[k] == HowInferred {
					status, how, conf = lp.Status[k], HowInferred, "NA"
				}
				best = best || p.Best == "" && lp.Best == st
			}
			points = append(points, withParams(p, st, strconv.Itoa(len(p.Reps)), status, conf,
				strconv.FormatBool(best), priority.Metric, num(finiteMean(vals)), strconv.FormatBool(p.Settled), how, floorWhy(floor[k])))
		}
	}
	listed := map[[2]int]bool{}
	for _, p := range m.Points {
		listed[p.Index] = true
	}
	for _, lp := range m.Lattice {
		if listed[lp.Index] || !slices.Contains(lp.How, HowInferred) && !slices.Contains(lp.How, HowFloor) {
			continue
		}
		pr := &PointResult{Point: lp.Point}
		for k, st := range m.Stacks {
			conf, f := "NA", math.NaN()
			if lp.How[k] == HowFloor {
				conf = "1"
			}
			if k < len(lp.Floor) {
				f = lp.Floor[k]
			}
			points = append(points, withParams(pr, st, "0", lp.Status[k], conf, strconv.FormatBool(lp.Best == st),
				priority.Metric, "NA", "true", lp.How[k], floorWhy(f)))
		}
	}
	verdicts := [][]string{append(append([]string{"point"}, params...), "comparison", "kind", "stack", "a", "b", "metric", "op", "bound", "label", "p", "confidence", "effect", "repetitions")}
	for _, p := range m.Points {
		for ci, c := range m.Comparisons {
			v := p.Verdicts[ci]
			verdicts = append(verdicts, withParams(p, c.Name(), c.Kind, c.Stack, c.A, c.B, c.Requirement.Metric, c.Requirement.Op,
				num(c.Requirement.Bound), v.Label, num(v.P), confidence(v.P), num(v.Effect), strconv.Itoa(v.N)))
		}
	}
	bounds := [][]string{{"comparison", "kind", "stack", "a", "b", "metric", "parameter", "low", "estimate", "high", "at_parameter", "at", "below", "above", "sentence"}}
	var sentences []string
	for _, b := range m.Boundaries {
		c := m.Comparisons[b.Comparison]
		atParam, at := "", "NA"
		if !math.IsNaN(b.At) {
			atParam, at = m.Params[1-b.Axis].Path, num(b.At)
		}
		s := m.Sentence(b)
		sentences = append(sentences, s)
		bounds = append(bounds, []string{c.Name(), c.Kind, c.Stack, c.A, c.B, c.Requirement.Metric, m.Params[b.Axis].Path,
			num(b.Low), num(b.Estimate), num(b.High), atParam, at, b.Below, b.Above, s})
	}
	evidence := [][]string{{"comparison", "parameter", "at_parameter", "at", "side", "point", "stack", "figure", "mean"}}
	for _, b := range m.Boundaries {
		atParam, at := "", "NA"
		if !math.IsNaN(b.At) {
			atParam, at = m.Params[1-b.Axis].Path, num(b.At)
		}
		for _, a := range b.Accounts {
			evidence = append(evidence, []string{m.Comparisons[b.Comparison].Name(), m.Params[b.Axis].Path, atParam, at, a.Side, num(a.At), a.Stack, a.Figure, num(a.Mean)})
		}
	}
	files := map[string][][]string{PointsFile: points, VerdictsFile: verdicts, BoundariesFile: bounds, EvidenceFile: evidence}
	if m.Why != nil {
		files[WhyFile] = m.whyRows()
	}
	for name, rows := range files {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if err := w.WriteAll(rows); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	f := Facts{Stacks: m.Stacks, Comparisons: m.Comparisons, Points: len(m.Points), Cells: m.Cells, GridPoints: m.GridPoints,
		Rounds: m.Rounds, Stopped: m.Stopped, Alpha: m.Alpha, MapAlpha: m.MapAlpha(), Tests: m.Tests, Rule: m.Rule, Boundaries: sentences, Open: []string{}}
	for _, p := range m.Params {
		f.Parameters = append(f.Parameters, ParamFacts{Path: p.Path, Low: p.Low, High: p.High, Unit: p.Unit, Log: p.Log})
	}
	for _, r := range m.Open {
		f.Open = append(f.Open, r.Why)
	}
	if m.Why != nil {
		f.WhyAlpha, f.WhyTests = m.Why.Alpha, m.Why.Tests
		for _, w := range m.Why.Whys {
			f.Why = append(f.Why, w.Says)
		}
	}
	if f.Boundaries == nil {
		f.Boundaries = []string{}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MapFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, AnswerFile), []byte(m.Answer()), 0o644)
}

// whyRows are explore-why.csv: one row per boundary, removal and stack
// the boundary's comparison involves: the verdicts on either side before
// and after the removal, whether it moved the boundary, the boundary's
// mechanism, and each evidence figure on either side before and after
// (the stack's mean over the side's repetitions; NA where not measured).
func (m *Map) whyRows() [][]string {
	var figures []string
	for _, w := range m.Why.Whys {
		for _, a := range w.Boundary.Accounts {
			if !slices.Contains(figures, a.Figure) {
				figures = append(figures, a.Figure)
			}
		}
	}
	head := []string{"comparison", "parameter", "low", "estimate", "high", "at_parameter", "at", "removal", "impairment", "removed",
		"below_before", "above_before", "below_after", "above_after", "repetitions_below", "repetitions_above", "moved", "mechanism", "stack"}
	for _, f := range figures {
		head = append(head, f+"_below_before", f+"_below_after", f+"_above_before", f+"_above_after")
	}
	head = append(head, "says", "why")
	rows := [][]string{head}
	mean := func(acc []Account, side, stack, fig string) string {
		for _, a := range acc {
			if a.Side == side && a.Stack == stack && a.Figure == fig {
				return num(a.Mean)
			}
		}
		return "NA"
	}
	for _, w := range m.Why.Whys {
		b := w.Boundary
		c := m.Comparisons[b.Comparison]
		stacks := []string{c.Stack}
		if c.Kind == PairKind {
			stacks = []string{c.A, c.B}
		}
		atParam, at := "", "NA"
		if !math.IsNaN(b.At) {
			atParam, at = m.Params[1-b.Axis].Path, num(b.At)
		}
		mech := strings.Join(w.Mechanism, "+")
		if mech == "" {
			mech = "not attributed"
		}
		for _, r := range w.Removals {
			var removed []string
			for _, s := range r.Ablation.Settings {
				removed = append(removed, s.Path+"="+s.Value)
			}
			below, above := r.Below.Label, r.Above.Label
			nb, na := strconv.Itoa(r.Below.N), strconv.Itoa(r.Above.N)
			if r.Moved == MovedAbsent || r.Moved == MovedExplored {
				below, above, nb, na = "NA", "NA", "0", "0"
			}
			for _, st := range stacks {
				row := []string{c.Name(), m.Params[b.Axis].Path, num(b.Low), num(b.Estimate), num(b.High), atParam, at,
					r.Ablation.Name, r.Ablation.Impairment, strings.Join(removed, " "), b.Below, b.Above, below, above, nb, na, r.Moved, mech, st}
				for _, f := range figures {
					row = append(row, mean(b.Accounts, "below", st, f), mean(r.Accounts, "below", st, f),
						mean(b.Accounts, "above", st, f), mean(r.Accounts, "above", st, f))
				}
				rows = append(rows, append(row, r.Says, w.Says))
			}
		}
	}
	return rows
}
