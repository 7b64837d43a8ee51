package explore

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/advise"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// Spec is a scenario's explore: section.
//
//	explore:
//	  parameters:
//	    link.loss: 0%..5%                       # linear, a 32nd of the range
//	    link.rtt: {range: 5ms..300ms, scale: log, resolution: 10ms}
//	  coarse: 4            # intervals of the first grid, per parameter
//	  min_repetitions: 2
//	  max_repetitions: 10
//	  alpha: 0.05          # the map's chance of any wrong decided verdict
//	  rule: t              # or sign
//	  max_points: 16
//	  budget: 200          # cells, or a duration: 30m
//	  monotone: [link.loss, link.rtt]  # statuses inferred along them:
//	                       # link.loss, link.rtt, link.delay, link.jitter
//	                       # (worse as they grow), link.rate (as it falls)
type Spec struct {
	Params         []Param
	Coarse         int
	MinRepetitions int
	MaxRepetitions int
	Alpha          float64
	Rule           Rule
	MaxPoints      int
	Budget         Budget
	// Monotone are the fields declared monotone (monotone.go).
	Monotone []string
	// node is the section, for errors at its line.
	node yaml.Node
}

// specFields are the section's keys (parameters decoded by hand: its
// order is the axes' order).
type specFields struct {
	Parameters     yaml.Node `yaml:"parameters"`
	Coarse         int       `yaml:"coarse"`
	MinRepetitions int       `yaml:"min_repetitions"`
	MaxRepetitions int       `yaml:"max_repetitions"`
	Alpha          float64   `yaml:"alpha"`
	Rule           string    `yaml:"rule"`
	MaxPoints      int       `yaml:"max_points"`
	Budget         string    `yaml:"budget"`
	Monotone       []string  `yaml:"monotone"`
}

type paramFields struct {
	Range      string `yaml:"range"`
	Scale      string `yaml:"scale"`
	Resolution string `yaml:"resolution"`
}

// Decode reads an explore: section, reporting mistakes at their file
// and line.
func Decode(file string, node *yaml.Node) (Spec, error) {
	var f specFields
	if err := strictyaml.Decode(file, node, &f); err != nil {
		return Spec{}, err
	}
	spec := Spec{Coarse: f.Coarse, MinRepetitions: f.MinRepetitions, MaxRepetitions: f.MaxRepetitions,
		Alpha: f.Alpha, Rule: Rule(f.Rule), MaxPoints: f.MaxPoints, node: *node}
	spec.Monotone = f.Monotone
	ps := &f.Parameters
	if ps.Kind != yaml.MappingNode || len(ps.Content) == 0 {
		return Spec{}, strictyaml.ErrorAt(file, node, "parameters", "explore.parameters: want one or two field paths with ranges, such as link.loss: 0%%..5%%")
	}
	if len(ps.Content) > 4 {
		return Spec{}, strictyaml.ErrorAt(file, ps, "", "explore.parameters: at most two parameters at once (a line or a plane), not %d", len(ps.Content)/2)
	}
	for i := 0; i+1 < len(ps.Content); i += 2 {
		k, v := ps.Content[i], ps.Content[i+1]
		pf := paramFields{}
		if v.Kind == yaml.ScalarNode {
			pf.Range = v.Value
		} else if err := strictyaml.Decode(file, v, &pf); err != nil {
			return Spec{}, err
		}
		at := func(format string, args ...any) error {
			return &strictyaml.Error{File: file, Line: v.Line, Msg: fmt.Sprintf("explore.parameters.%s: ", k.Value) + fmt.Sprintf(format, args...)}
		}
		if k.Value == "protocols" || k.Value == "profiles" || k.Value == "repetitions" || strings.HasPrefix(k.Value, "explore") || strings.HasPrefix(k.Value, "matrix") {
			return Spec{}, at("not a field to explore: a range is over a network's or the workload's fields")
		}
		lo, hi, unit, integer, err := ParseRange(pf.Range)
		if err != nil {
			return Spec{}, at("%v", err)
		}
		p := Param{Path: k.Value, Low: lo, High: hi, Unit: unit, Integer: integer}
		switch pf.Scale {
		case "", "linear":
		case "log":
			if lo <= 0 {
				return Spec{}, at("a logarithmic scale needs a low end above 0")
			}
			p.Log = true
		default:
			return Spec{}, at("scale %q: want linear or log", pf.Scale)
		}
		if pf.Resolution != "" {
			if p.Resolution, err = ParseAmount(pf.Resolution, unit); err != nil {
				return Spec{}, at("resolution %v", err)
			}
		}
		spec.Params = append(spec.Params, p)
	}
	if f.Budget != "" {
		b, err := ParseBudget(f.Budget)
		if err != nil {
			return Spec{}, strictyaml.ErrorAt(file, node, "budget", "explore.budget: %v", err)
		}
		spec.Budget = b
	}
	if spec.Rule != "" {
		if err := spec.Rule.Valid(); err != nil {
			return Spec{}, strictyaml.ErrorAt(file, node, "rule", "explore.%v", err)
		}
	}
	if _, err := monotoneDirections(spec.Params, spec.Monotone); err != nil {
		return Spec{}, strictyaml.ErrorAt(file, node, "monotone", "explore.%v", err)
	}
	cfg := spec.Config(nil, nil)
	cfg.Stacks, cfg.Require = []string{"-"}, placeholderRequirement
	if err := cfg.Validate(); err != nil {
		return Spec{}, strictyaml.ErrorAt(file, node, "", "%v", err)
	}
	return spec, nil
}

// ParseBudget reads a budget: a number of cells ("200") or a duration
// ("30m", "2h").
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return Budget{}, fmt.Errorf("%q: want at least one cell", s)
		}
		return Budget{Cells: n}, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil || d.D() <= 0 {
		return Budget{}, fmt.Errorf("%q: want a number of cells (200) or a duration (30m)", s)
	}
	return Budget{Duration: d.D()}, nil
}

// placeholderRequirement stands in for the scenario's requirements when
// the section is checked on its own.
var placeholderRequirement = []advise.Requirement{{Metric: "x", Op: "<=", Bound: 0}}

// Config is the search the section asks for, over the stacks and
// requirements given (the scenario's).
func (s Spec) Config(stacks []string, require []advise.Requirement) Config {
	cfg := Config{Params: s.Params, Stacks: stacks, Require: require, Coarse: s.Coarse, MinReps: s.MinRepetitions,
		MaxReps: s.MaxRepetitions, Alpha: s.Alpha, Rule: s.Rule, MaxPoints: s.MaxPoints, Budget: s.Budget}
	// Checked by Decode: a Spec that decoded has valid directions.
	cfg.Monotone, _ = monotoneDirections(s.Params, s.Monotone)
	cfg.Defaults()
	return cfg
}
