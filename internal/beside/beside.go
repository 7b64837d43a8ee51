// Package beside owns a scenario's beside: section: other workloads that
// run beside the cell's, each over a stack of its own, on the same hosts
// and links (a second control loop, an MQTT stream beside a loop). It
// decodes and checks the section (scenario.RegisterSection) and Of reads
// it back; the experiment runs the flows (experiment/beside.go).
package beside

import (
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
	"tlab/internal/workload"
)

func init() {
	scenario.RegisterSection(scenario.Section{Name: "beside", Decode: decodeSection})
}

// Spec is one entry of a scenario's beside: section: a registered
// workload (its type and parameters, as under workload:) over a
// registered protocol, named for its columns.
type Spec struct {
	Name     string    `yaml:"name"`
	Protocol string    `yaml:"protocol"`
	Workload yaml.Node `yaml:"workload"`
}

// Flow is a decoded beside: entry.
type Flow struct {
	// Name is the flow's name: its columns are beside_NAME_*, its records
	// the cell's beside-NAME.csv.
	Name     string
	Protocol string
	Workload workload.Workload
}

// Max bounds the workloads beside a cell's.
const Max = 8

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// decodeSection decodes and checks beside: each name short and unique,
// each protocol registered and able to carry its workload, each error at
// its field's line.
func decodeSection(s *scenario.Scenario, node *yaml.Node) (any, error) {
	var specs []Spec
	if err := strictyaml.Decode(s.File(), node, &specs); err != nil {
		return nil, err
	}
	if len(specs) > Max {
		return nil, s.ErrorAt([]any{"beside"}, "beside: %d workloads, at most %d", len(specs), Max)
	}
	var flows []Flow
	var names []string
	for i, b := range specs {
		at := func(field string) []any { return []any{"beside", i, field} }
		if !nameRE.MatchString(b.Name) {
			return nil, s.ErrorAt(at("name"), "beside name %q: want a short name of lower-case letters and digits (its columns are beside_NAME_*)", b.Name)
		}
		if slices.Contains(names, b.Name) {
			return nil, s.ErrorAt(at("name"), "beside name %q is used twice", b.Name)
		}
		names = append(names, b.Name)
		if _, err := proto.Lookup(b.Protocol); err != nil {
			return nil, s.ErrorAt(at("protocol"), "%v", err)
		}
		w, err := s.WorkloadAt(at("workload"), &specs[i].Workload)
		if err != nil {
			return nil, err
		}
		if err := w.Info().Accepts(b.Protocol); err != nil {
			return nil, s.ErrorAt(at("protocol"), "%v", err)
		}
		flows = append(flows, Flow{Name: b.Name, Protocol: b.Protocol, Workload: w})
	}
	return flows, nil
}

// Of is the workloads that run beside a scenario's (or one cell's): none
// when it has no beside: section.
func Of(s *scenario.Scenario) []Flow {
	flows, _ := scenario.Value[[]Flow](s, "beside")
	return slices.Clone(flows)
}
