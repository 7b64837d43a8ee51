package scenario_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"tlab/internal/advise"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
)

// The toy section proves the seam: one registration in a test file, and
// a scenario's toy: section is decoded strictly, checked with its file
// and line, swept by a matrix like any field, and read back typed by its
// owner, with no change to package scenario.
type toySection struct {
	Level int    `yaml:"level"`
	Tag   string `yaml:"tag"`
}

func init() {
	scenario.RegisterSection(scenario.Section{
		Name: "toy",
		Decode: func(s *scenario.Scenario, node *yaml.Node) (any, error) {
			var v toySection
			if err := strictyaml.Decode(s.File(), node, &v); err != nil {
				return nil, err
			}
			if v.Level < 0 || v.Level > 10 {
				return nil, s.ErrorAt([]any{"toy", "level"}, "toy.level %d: want 0 to 10", v.Level)
			}
			return v, nil
		},
		Check: func(s *scenario.Scenario, node *yaml.Node) error {
			if v, _ := scenario.Value[toySection](s, "toy"); v.Tag == "loud" {
				s.Warn(s.ErrorAt([]any{"toy", "tag"}, "toy.tag loud: heard in every cell"))
			}
			return nil
		},
		Columns: func(v any) []string { return []string{fmt.Sprintf("toy_level_%d", v.(toySection).Level)} },
	})
}

const toyBase = "name: t\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\nduration: 1s\n"

func TestToySectionIsDecodedAndCheckedByItsOwner(t *testing.T) {
	s, err := scenario.Parse("toy.yaml", []byte(toyBase+"toy:\n  level: 3\n  tag: loud\nrequire: [\"delay_p99_ms<=20\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := scenario.Value[toySection](s, "toy"); !ok || v.Level != 3 {
		t.Errorf("toy section decoded as %+v (%v), want level 3", v, ok)
	}
	// The column the section says it adds is the scenario's.
	if got := s.SectionColumns(); !slices.Contains(got, "toy_level_3") {
		t.Errorf("section columns %v, want toy_level_3 among them", got)
	}
	// Its Check's warning names the tag's line (8: the line after toy's
	// level, counted from the file's first line, name:).
	if w := s.Warnings(); !slices.Contains(w, "toy.yaml:8: toy.tag loud: heard in every cell") {
		t.Errorf("warnings %q, want the toy's at toy.yaml:8", w)
	}
	// The other registered sections are read the same way, typed by their
	// owners.
	if reqs := advise.RequirementsOf(s); len(reqs) != 1 || reqs[0].Metric != "delay_p99_ms" {
		t.Errorf("requirements %+v, want delay_p99_ms<=20", reqs)
	}
	// A scenario without the section has no value.
	plain, err := scenario.Parse("plain.yaml", []byte(toyBase))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scenario.Value[toySection](plain, "toy"); ok {
		t.Error("a scenario without toy: has a toy value")
	}
}

func TestToySectionSweptByTheMatrixPerCell(t *testing.T) {
	s, err := scenario.Parse("toy.yaml", []byte(toyBase+"toy: {level: 1}\nmatrix:\n  toy.level: [2, 7]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, points, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var levels []int
	for _, c := range cells {
		v, _ := scenario.Value[toySection](points[c.Point], "toy")
		levels = append(levels, v.Level)
	}
	// One cell per matrix value, in the matrix's order, each decoded with
	// its own point's value.
	if !slices.Equal(levels, []int{2, 7}) {
		t.Errorf("cells' toy levels %v, want [2 7]", levels)
	}
}

func TestToySectionErrorsNameFileAndLine(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		// Line 6 is toy:, 7 its first field (toyBase has five lines).
		{"toy:\n  level: 11\n", "toy.yaml:7: toy.level 11: want 0 to 10"},
		{"toy:\n  tag: x\n  volume: 3\n", `toy.yaml:8: unknown key "volume"; expected one of: level, tag`},
		{"toy: [1]\n", "toy.yaml:6: want a mapping of level, tag, got a list"},
		// A swept value is checked alone, at the value's line.
		{"matrix:\n  toy.level: [1, 12]\n", "toy.yaml:7: toy.level 12: want 0 to 10"},
	} {
		_, err := scenario.Parse("toy.yaml", []byte(toyBase+c.src))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %s", c.src, err, c.want)
		}
	}
	// A key nobody registered is refused, and the choices name the
	// registered sections beside the scenario's own fields.
	_, err := scenario.Parse("toy.yaml", []byte(toyBase+"toys: {level: 1}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), `toy.yaml:6: unknown key "toys"; expected one of: `) || !strings.Contains(err.Error(), " toy, ") || !strings.Contains(err.Error(), " cross, ") {
		t.Errorf("an unregistered section: %v", err)
	}
}
