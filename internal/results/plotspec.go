package results

import (
	"fmt"
	"strings"
)

// PlotSpec is one entry of a scenario's plots: a plot kind, and the swept
// values its figure fixes, after @ as key=value joined by & (a comma
// would end the entry in a YAML flow list)
// ("delay_box@workload.interval=25ms": study A's Fig. 1 at d = 25 ms).
// Without @ the figure draws every row.
type PlotSpec struct {
	Kind  string
	Fixed []Param
}

// ParsePlotSpec reads a plots entry.
func ParsePlotSpec(s string) (PlotSpec, error) {
	kind, fixed, has := strings.Cut(strings.TrimSpace(s), "@")
	p := PlotSpec{Kind: strings.TrimSpace(kind)}
	if p.Kind == "" {
		return p, fmt.Errorf("plot %q: want a kind, optionally @key=value&...", s)
	}
	if !has {
		return p, nil
	}
	for _, kv := range strings.Split(fixed, "&") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return p, fmt.Errorf("plot %q: after @ want key=value (a swept key and one of its values), joined by &", s)
		}
		p.Fixed = append(p.Fixed, Param{Key: k, Value: v})
	}
	return p, nil
}

// Keeps tells whether a row is swept at every value the figure fixes.
func (p PlotSpec) Keeps(s Summary) bool {
	for _, f := range p.Fixed {
		if s.Param(f.Key) != f.Value {
			return false
		}
	}
	return true
}

// Fixes says what the figure fixes, for its title ("interval 25ms"), ""
// when nothing.
func (p PlotSpec) Fixes() string {
	var parts []string
	for _, f := range p.Fixed {
		parts = append(parts, f.Key[strings.LastIndex(f.Key, ".")+1:]+" "+f.Value)
	}
	return strings.Join(parts, ", ")
}
