package scenario

import (
	"slices"

	"go.yaml.in/yaml/v3"

	"tlab/internal/workload"
)

// BuiltInProtocols are the protocols that are not the scenario's own
// (those a section provides: its stacks:).
func (s *Scenario) BuiltInProtocols() []string {
	return slices.DeleteFunc(slices.Clone(s.Protocols), func(p string) bool { return s.provided[p] })
}

// WorkloadParams are the workload's parameters as the scenario gives them
// (its defaults where it is silent), by name: what a command stack's
// templates may use as {workload.NAME}.
func (s *Scenario) WorkloadParams() map[string]string {
	out := map[string]string{}
	node := &s.Workload
	typeName := "periodic"
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == "type" {
				typeName = node.Content[i+1].Value
			}
		}
	}
	if t, err := workload.Lookup(typeName); err == nil {
		for _, p := range t.Params {
			out[p.Name] = p.Default
		}
	}
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i].Value, node.Content[i+1]
			if k != "type" && v.Kind == yaml.ScalarNode {
				out[k] = v.Value
			}
		}
	}
	return out
}
