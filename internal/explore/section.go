package explore

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/advise"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
)

// A scenario's explore: section is this package's: it checks it against
// the whole scenario, and each cell (one point) is made without it.
func init() {
	scenario.RegisterSection(scenario.Section{Name: "explore", Check: checkSection, Whole: true})
}

// checkSection validates a scenario's explore: section against the rest
// of the scenario: every parameter's ends must make a valid cell, the
// answer needs requirements, and a range replaces a matrix.
func checkSection(s *scenario.Scenario, node *yaml.Node) error {
	spec, err := Decode(s.File(), node)
	if err != nil {
		return err
	}
	if s.Matrix.Kind != 0 {
		return strictyaml.ErrorAt(s.File(), node, "", "explore: a scenario explores ranges or sweeps a matrix, not both: move the matrix's fields into explore.parameters")
	}
	if len(advise.RequirementsOf(s)) == 0 {
		return strictyaml.ErrorAt(s.File(), node, "", "explore: the scenario needs require: (the first requirement's metric is what the stacks are compared by), such as require: [\"delay_p99_ms<=50\"]")
	}
	if len(s.Profiles) != 1 {
		return strictyaml.ErrorAt(s.File(), node, "", "explore: explore one network at a time (profiles has %d): the range is its fields", len(s.Profiles))
	}
	for _, end := range []float64{0, 1} {
		params := Settings(spec.Params, end)
		if _, _, err := s.CellAt(s.Profiles[0], s.Protocols[0], 1, params); err != nil {
			return strictyaml.ErrorAt(s.File(), &spec.node, "parameters", "explore.parameters at %s: %v", describe(params), err)
		}
	}
	return nil
}

// Settings are the parameters' values at u in [0, 1] of each range, as
// the scenario's fields read them.
func Settings(ps []Param, u float64) []results.Param {
	var out []results.Param
	for _, p := range ps {
		out = append(out, results.Param{Key: p.Path, Value: p.Format(p.At(u))})
	}
	return out
}

// SpecOf decodes a scenario's explore: section (an error when it has
// none).
func SpecOf(s *scenario.Scenario) (Spec, error) {
	node := s.SectionNode("explore")
	if node == nil {
		return Spec{}, fmt.Errorf("%s: no explore: section (give parameters with ranges, such as explore: {parameters: {link.loss: 0%%..5%%}})", s.File())
	}
	return Decode(s.File(), node)
}

// describe writes settings as path=value, space-separated.
func describe(ps []results.Param) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.Key+"="+p.Value)
	}
	return strings.Join(parts, " ")
}
