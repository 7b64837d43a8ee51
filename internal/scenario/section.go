package scenario

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/results"
)

// SectionCheck validates a section of a scenario that another package
// reads (explore:), with the rest of the scenario already valid; its
// errors name the file and line (strictyaml.Error).
type SectionCheck func(s *Scenario, node *yaml.Node) error

// sections are the registered checks by section name, filled from the
// owning packages' init (as database/sql drivers register themselves).
var sections = map[string]SectionCheck{}

// RegisterSection registers the check of a section the scenario keeps as
// a node. A program that does not link the owning package accepts the
// section unchecked (it does not read it either).
func RegisterSection(name string, check SectionCheck) {
	if _, dup := sections[name]; dup {
		panic("scenario: section " + name + " registered twice")
	}
	sections[name] = check
}

// checkSections runs the registered checks of the sections present.
func (s *Scenario) checkSections() error {
	if s.Explore.Kind != 0 {
		if check := sections["explore"]; check != nil {
			return check(s, &s.Explore)
		}
	}
	return nil
}

// CellAt is the cell of one point given by its fields' values (dotted
// paths, as a matrix's keys), for a profile, a protocol and a
// repetition: a point an exploration chose. Its id names the point and
// the repetition rather than a position, so that the same point is the
// same cell however the search reached it (a resume finds it done), and
// its seed is the repetition's, the same for every protocol.
func (s *Scenario) CellAt(profile, protocol string, rep int, params []results.Param) (Cell, error) {
	keys := make([]string, len(params))
	vals := make([]*yaml.Node, len(params))
	parts := []string{"x", profile, protocol}
	for i, p := range params {
		keys[i] = p.Key
		vals[i] = &yaml.Node{Kind: yaml.ScalarNode, Value: p.Value}
		parts = append(parts, p.Key[strings.LastIndex(p.Key, ".")+1:]+"="+p.Value)
	}
	inst, err := s.with(keys, vals)
	if err != nil {
		return Cell{}, err
	}
	parts = append(parts, fmt.Sprintf("r%d", rep))
	return Cell{ID: results.SafeName(strings.Join(parts, "_")), Profile: profile, Site: s.Sites[profile], Protocol: protocol,
		Rep: rep, Params: params, Scenario: inst}, nil
}
