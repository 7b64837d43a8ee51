package scenario

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/advise"
	"tlab/internal/cross"
	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/workload"
)

// checkRequirementsProduced warns about each requirement whose metric no
// cell of the scenario produces: not the workload's (a frame round trip
// asked of a control loop), or left undefined by every configuration the
// matrix sweeps (study D's Δ+ without the reconnect pattern). No stack
// can be judged on it, so the answer would only ever say "not measured".
// Only measured metrics are judged; cross traffic's count when the
// scenario has cross traffic.
func (s *Scenario) checkRequirementsProduced() error {
	if len(s.Require) == 0 {
		return nil
	}
	infos, err := s.workloadInfos()
	if err != nil {
		return err
	}
	for i, text := range s.Require {
		req, err := advise.ParseRegistered(text)
		if err != nil {
			continue // validate refuses it with its own message
		}
		if m, ok := metrics.Lookup(req.Metric); !ok || m.Kind != metrics.Measured {
			continue
		}
		if s.Cross.Active() && slices.Contains(cross.FactNames, req.Metric) {
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
		w := s.errAt([]any{"require", i}, "require %s: no cell of this scenario produces %s: %s, so no stack can be judged on it", text, req.Metric, why)
		s.whole = append(s.whole, w.Error())
	}
	return nil
}

// workloadInfos are the workload's descriptions in every configuration
// the matrix sweeps (its workload.* keys' combinations); one without.
func (s *Scenario) workloadInfos() ([]workload.Info, error) {
	keys, vals := s.matrix()
	combos := [][]*yaml.Node{{}}
	var wkeys []string
	for i, k := range keys {
		if !strings.HasPrefix(k, "workload.") {
			continue
		}
		wkeys = append(wkeys, k)
		var next [][]*yaml.Node
		for _, c := range combos {
			for _, v := range vals[i] {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		combos = next
	}
	if len(wkeys) == 0 {
		return []workload.Info{s.workload.Info()}, nil
	}
	var infos []workload.Info
	for _, c := range combos {
		root := clone(s.root)
		for i, k := range wkeys {
			if err := setPath(root, strings.Split(k, "."), clone(c[i])); err != nil {
				return nil, s.errAt([]any{"matrix", k}, "matrix %s: %v", k, err)
			}
		}
		node := nodeAt(root, []any{"workload"})
		if node == nil {
			node = &yaml.Node{}
		}
		w, err := s.workloadAt([]any{"workload"}, node)
		if err != nil {
			return nil, err
		}
		infos = append(infos, w.Info())
	}
	return infos, nil
}

// checkFixed finds a plot that fixes a key the matrix does not sweep, or a
// value it does not take: no row would be drawn. A cell's scenario (no
// matrix) has nothing to check.
func (s *Scenario) checkFixed(spec results.PlotSpec) error {
	if s.cell {
		return nil
	}
	keys, vals := s.matrix()
	for _, f := range spec.Fixed {
		i := slices.Index(keys, f.Key)
		if i < 0 {
			return fmt.Errorf("%s is not swept (the matrix sweeps %s)", f.Key, strings.Join(keys, ", "))
		}
		var values []string
		for _, v := range vals[i] {
			values = append(values, v.Value)
		}
		if !slices.Contains(values, f.Value) {
			return fmt.Errorf("%s takes %s, not %s", f.Key, strings.Join(values, ", "), f.Value)
		}
	}
	return nil
}
