package qoo

import (
	"go.yaml.in/yaml/v3"

	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
)

// A scenario's qoo: section (the application's Quality of Outcome
// requirement profile: one of tlab qoo's, or a LibreQoS profiles file
// FILE[#ID]) is this package's: it resolves it once per scenario
// (scenario.RegisterSection), and ProfileOf reads it back. The answer
// scores each stack from 0 to 100 against it, beside the requirements
// (tlab run --qoo replaces it).
func init() { scenario.RegisterSection(scenario.Section{Name: "qoo", Decode: decodeSection}) }

func decodeSection(s *scenario.Scenario, node *yaml.Node) (any, error) {
	var name string
	if err := strictyaml.Decode(s.File(), node, &name); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, nil
	}
	p, err := Resolve(name)
	if err != nil {
		return nil, s.ErrorAt([]any{"qoo"}, "qoo: %v", err)
	}
	return p, nil
}

// ProfileOf is a scenario's Quality of Outcome profile, resolved, and
// whether it names one.
func ProfileOf(s *scenario.Scenario) (Profile, bool) { return scenario.Value[Profile](s, "qoo") }
