package scenario

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// AutoMinRepetitions is how many repetitions every cell of a scenario
// with repetitions: auto gets before its verdicts are judged (the
// sequential rule needs two); DefaultMaxRepetitions bounds them when
// max_repetitions is not given.
const (
	AutoMinRepetitions    = 2
	DefaultMaxRepetitions = 10
)

// withAutoRepetitions returns the tree to decode: root itself, or a copy
// whose repetitions: auto reads as the minimum, and whether it did. The
// scenario keeps root (its YAML says auto, so that a resume does too).
func withAutoRepetitions(root *yaml.Node) (*yaml.Node, bool) {
	for i := 0; root.Kind == yaml.MappingNode && i+1 < len(root.Content); i += 2 {
		if k, v := root.Content[i], root.Content[i+1]; k.Value == "repetitions" && v.Kind == yaml.ScalarNode && v.Value == "auto" {
			c := clone(root)
			n := *v
			n.Tag, n.Value = "!!int", strconv.Itoa(AutoMinRepetitions)
			c.Content[i+1] = &n
			return c, true
		}
	}
	return root, false
}

// AutoRepetitions says whether the scenario repeats its cells until
// decided (repetitions: auto), and up to how many repetitions.
func (s *Scenario) AutoRepetitions() (maxReps int, ok bool) { return s.MaxRepetitions, s.auto }
