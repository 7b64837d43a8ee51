package scenario

import (
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/workload"
)

// BesideSpec is one entry of a scenario's beside: section: a registered
// workload (its type and parameters, as under workload:) over a registered
// protocol, named for its columns.
type BesideSpec struct {
	Name     string    `yaml:"name"`
	Protocol string    `yaml:"protocol"`
	Workload yaml.Node `yaml:"workload"`
}

// BesideFlow is a decoded beside: entry.
type BesideFlow struct {
	// Name is the flow's name: its columns are beside_NAME_*, its records
	// the cell's beside-NAME.csv.
	Name     string
	Protocol string
	Workload workload.Workload
}

// MaxBeside bounds the workloads beside a cell's.
const MaxBeside = 8

var besideName = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// decodeBeside decodes and checks beside: each name short and unique,
// each protocol registered and able to carry its workload.
func (s *Scenario) decodeBeside() error {
	if len(s.Beside) > MaxBeside {
		return s.errAt([]any{"beside"}, "beside: %d workloads, at most %d", len(s.Beside), MaxBeside)
	}
	s.beside = nil
	var names []string
	for i, b := range s.Beside {
		at := func(field string) []any { return []any{"beside", i, field} }
		if !besideName.MatchString(b.Name) {
			return s.errAt(at("name"), "beside name %q: want a short name of lower-case letters and digits (its columns are beside_NAME_*)", b.Name)
		}
		if slices.Contains(names, b.Name) {
			return s.errAt(at("name"), "beside name %q is used twice", b.Name)
		}
		names = append(names, b.Name)
		if _, err := proto.Lookup(b.Protocol); err != nil {
			return s.errAt(at("protocol"), "%v", err)
		}
		w, err := s.workloadAt(at("workload"), &s.Beside[i].Workload)
		if err != nil {
			return err
		}
		if err := w.Info().Accepts(b.Protocol); err != nil {
			return s.errAt(at("protocol"), "%v", err)
		}
		s.beside = append(s.beside, BesideFlow{Name: b.Name, Protocol: b.Protocol, Workload: w})
	}
	return nil
}

// BesideFlows are the workloads that run beside the cell's.
func (s *Scenario) BesideFlows() []BesideFlow { return slices.Clone(s.beside) }
