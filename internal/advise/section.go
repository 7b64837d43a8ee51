package advise

import (
	"slices"

	"go.yaml.in/yaml/v3"

	"tlab/internal/metrics"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
)

// A scenario's require: section (the application's requirements,
// "delay_p99_ms<=25", the first the priority: a run opens with which
// stack meets them; tlab run --require replaces them) is this package's:
// it parses them once per scenario (scenario.RegisterSection), warns
// about those no cell produces, and RequirementsOf reads them back.
func init() {
	scenario.RegisterSection(scenario.Section{Name: "require", Decode: decodeSection, Check: checkProduced})
}

// texts decodes the section's list of requirements as written.
func texts(s *scenario.Scenario, node *yaml.Node) ([]string, error) {
	var out []string
	err := strictyaml.Decode(s.File(), node, &out)
	return out, err
}

func decodeSection(s *scenario.Scenario, node *yaml.Node) (any, error) {
	list, err := texts(s, node)
	if err != nil {
		return nil, err
	}
	reqs := make([]Requirement, 0, len(list))
	for i, text := range list {
		r, err := ParseRegistered(text)
		if err != nil {
			return nil, s.ErrorAt([]any{"require", i}, "%v", err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// RequirementsOf are a scenario's requirements, parsed (none when it has
// no require: section).
func RequirementsOf(s *scenario.Scenario) []Requirement {
	reqs, _ := scenario.Value[[]Requirement](s, "require")
	return slices.Clone(reqs)
}

// checkProduced warns about each requirement whose metric no cell of the
// scenario produces: not the workload's (a frame round trip asked of a
// control loop), or left undefined by every configuration the matrix
// sweeps (study D's Δ+ without the reconnect pattern). No stack can be
// judged on it, so the answer would only ever say "not measured". Only
// measured metrics are judged; the columns another section adds (cross
// traffic's) count as produced.
func checkProduced(s *scenario.Scenario, node *yaml.Node) error {
	list, err := texts(s, node)
	if err != nil || len(list) == 0 {
		return err
	}
	infos, err := s.WorkloadInfos()
	if err != nil {
		return err
	}
	added := s.SectionColumns()
	for i, text := range list {
		req, err := ParseRegistered(text)
		if err != nil {
			continue // decodeSection refused it with its own message
		}
		if m, ok := metrics.Lookup(req.Metric); !ok || m.Kind != metrics.Measured {
			continue
		}
		if slices.Contains(added, req.Metric) {
			continue
		}
		produced, listed := false, false
		for _, info := range infos {
			listed = listed || slices.Contains(info.Metrics, req.Metric)
			produced = produced || info.Produces(req.Metric)
		}
		if produced {
			continue
		}
		why := "the " + infos[0].Type + " workload has no such metric (tlab metrics lists each workload's)"
		if listed {
			why = "the " + infos[0].Type + " workload leaves it undefined in every configuration the scenario runs"
			if len(infos) == 1 {
				why += " (" + infos[0].Describe + ")"
			}
		}
		s.Warn(s.ErrorAt([]any{"require", i}, "require %s: no cell of this scenario produces %s: %s, so no stack can be judged on it", text, req.Metric, why))
	}
	return nil
}
