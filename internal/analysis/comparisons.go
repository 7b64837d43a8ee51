package analysis

import (
	"fmt"

	"tlab/internal/stats"
)

// ComparisonsStep is the step that compares the stacks pair by pair
// (tlab stats computes it alone).
const ComparisonsStep = "comparisons"

func init() {
	Register(Step{
		Name:    ComparisonsStep,
		Doc:     "every pair of stacks compared on each network and set of swept values (Holm-corrected, judged)",
		Columns: []string{"delay_ms"},
		Files:   []string{ComparisonsFile + ".csv", ComparisonsFile + ".json"},
		Compute: func(v *View, a *Analysis) error {
			if a.compared = v.HasRecords() || hasRepeats(v.Run.Rows); !a.compared {
				return nil
			}
			var err error
			if a.Verdicts, err = stats.ForRunOver(v.Run, v.records(), v.Seed); err != nil {
				return fmt.Errorf("comparisons: %w", err)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			if !a.compared && len(a.Verdicts) == 0 {
				return nil, nil
			}
			return comparisonFiles(ComparisonsFile), stats.WriteNamed(dir, ComparisonsFile, a.Verdicts)
		},
	})
}

// comparisonFiles are the files stats.WriteNamed writes for name.
func comparisonFiles(name string) []string { return []string{name + ".json", name + ".csv"} }
