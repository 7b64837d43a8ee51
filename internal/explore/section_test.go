package explore

import (
	"strings"
	"testing"

	_ "tlab/internal/proto/all" // every protocol family registers itself
	"tlab/internal/scenario"
)

const exploreBase = `name: e
profiles: [ethernet]
protocols: [quic, tcp]
workload:
  type: periodic
  interval: 25ms
duration: 2s
require: ["delay_p99_ms<=50"]
explore:
  parameters:
    link.loss: 0%..5%
    link.rtt: {range: 5ms..300ms, scale: log}
  max_repetitions: 6
  budget: 120
`

func TestTheExploreSectionDecodes(t *testing.T) {
	s, err := scenario.Parse("e.yaml", []byte(exploreBase))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := SpecOf(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Params) != 2 || spec.Params[0].Path != "link.loss" || spec.Params[0].High != 5 || spec.Params[0].Unit != "%" ||
		!spec.Params[1].Log || spec.Params[1].Low != 5 || spec.Params[1].Unit != "ms" {
		t.Errorf("parameters %+v", spec.Params)
	}
	if spec.Budget.Cells != 120 || spec.MaxRepetitions != 6 {
		t.Errorf("budget %+v, max_repetitions %d", spec.Budget, spec.MaxRepetitions)
	}
	// No monotone: list, no inference; one names the axes, with their
	// directions (more loss is worse: +1).
	if cfg := spec.Config(nil, nil); cfg.Monotone[0] != 0 || cfg.Monotone[1] != 0 {
		t.Errorf("monotone %v without a monotone: list, want none", cfg.Monotone)
	}
	s2, err := scenario.Parse("e.yaml", []byte(exploreBase+"  monotone: [link.loss]\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec2, err := SpecOf(s2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := spec2.Config(nil, nil); cfg.Monotone[0] != 1 || cfg.Monotone[1] != 0 {
		t.Errorf("monotone %v for [link.loss], want [1 0]", cfg.Monotone)
	}
	// A cell of the exploration is an ordinary cell without the section.
	c, point, err := s.CellAt("ethernet", "quic", 2, Settings(spec.Params, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	if point.SectionNode("explore") != nil || c.Seed == s.Seed {
		t.Errorf("cell %s keeps the section (%v) or the first repetition's seed", c.ID, point.SectionNode("explore"))
	}
}

// Mistakes are reported at their line (counted in exploreBase: link.loss
// is line 11, link.rtt 12, max_repetitions 13, budget 14), with what was
// expected.
func TestTheExploreSectionRefusesMistakesAtTheirLine(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"link.loss: 0%..5%", "link.loss: 0%..5ms", "e.yaml:11: explore.parameters.link.loss: range \"0%..5ms\": both ends need the same unit"},
		{"link.loss: 0%..5%", "link.loss: 5%..0%", "e.yaml:11: explore.parameters.link.loss: range \"5%..0%\": the high end must be above the low end"},
		{"scale: log", "scale: cubic", "e.yaml:12: explore.parameters.link.rtt: scale \"cubic\""},
		{"budget: 120", "budget: lots", "e.yaml:14: explore.budget: \"lots\": want a number of cells"},
		{"max_repetitions: 6", "max_repetitions: 1", "explore: max_repetitions 1 is below min_repetitions 2"},
		{"link.loss: 0%..5%", "link.lossy: 0%..5%", "explore.parameters at link.lossy=0%"},
		{"require: [\"delay_p99_ms<=50\"]\n", "", "explore: the scenario needs require:"},
		{"max_repetitions: 6", "max_repetitions: 6\n  surprise: 1", "e.yaml:14: unknown key \"surprise\""},
		{"budget: 120", "budget: 120\n  monotone: [link.loss, link.mtu]", "explore.monotone: link.mtu is not an explored parameter"},
		{"link.rtt: {range: 5ms..300ms, scale: log}", "workload.interval: 5ms..300ms\n  monotone: [workload.interval]", "explore.monotone: workload.interval has no known direction"},
	} {
		y := strings.Replace(exploreBase, tc.from, tc.to, 1)
		_, err := scenario.Parse("e.yaml", []byte(y))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q -> %q: error %v, want it to contain %q", tc.from, tc.to, err, tc.want)
		}
	}
}
