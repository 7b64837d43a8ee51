package cross

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
)

// A scenario's cross: section is this package's: it decodes and checks it
// (scenario.RegisterSection), and Of reads it back.
func init() {
	scenario.RegisterSection(scenario.Section{Name: "cross", Decode: decodeSection, Columns: columns})
}

// decodeSection decodes a scenario's cross: strictly and checks it
// against the workload's roles, each error at its field's line.
func decodeSection(s *scenario.Scenario, node *yaml.Node) (any, error) {
	var c Config
	if err := strictyaml.Decode(s.File(), node, &c); err != nil {
		return nil, err
	}
	if roles := s.WorkloadSpec().Info().Roles; c.Near != "" && !slices.Contains(roles, c.Near) {
		return nil, s.ErrorAt([]any{"cross", "near"}, "cross.near %q: the workload's roles are %s", c.Near, strings.Join(roles, ", "))
	}
	if field, err := c.Validate(); err != nil {
		path := []any{"cross"}
		if field != "" && s.Has("cross", field) {
			path = append(path, field)
		}
		return nil, s.ErrorAt(path, "%v", err)
	}
	return c, nil
}

// columns are the cross_* columns a cell with this load has (none
// without flows).
func columns(v any) []string {
	if c, _ := v.(Config); c.Active() {
		return slices.Clone(FactNames)
	}
	return nil
}

// Of is a scenario's (or one cell's) cross traffic: the zero Config,
// none, when it has no cross: section.
func Of(s *scenario.Scenario) Config {
	c, _ := scenario.Value[Config](s, "cross")
	return c
}
