package scenario

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/results"
	"tlab/internal/workload"
)

// WorkloadInfos are the workload's descriptions in every configuration
// the matrix sweeps (its workload.* keys' combinations); one without:
// what a requirement's metric is looked for in.
func (s *Scenario) WorkloadInfos() ([]workload.Info, error) {
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
		w, err := s.WorkloadAt([]any{"workload"}, node)
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
