package analysis

import (
	"fmt"
	"math"

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
			a.UnreachableP = unreachableP(a.Verdicts)
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

// unreachableP is the smallest p-value the best of vs could give when
// even that is not under stats.Alpha (too few repetitions for any
// verdict: a Mann-Whitney test of 3 against 3 cannot go under 0.1), 0
// when some comparison could be significant or one is request by request.
func unreachableP(vs []stats.Comparison) float64 {
	best := 1.0
	for _, v := range vs {
		if v.Unit != "repetition" {
			return 0
		}
		best = math.Min(best, stats.MinP(v.NA, v.NB))
	}
	if len(vs) == 0 || best < stats.Alpha {
		return 0
	}
	return best
}

// comparisonFiles are the files stats.WriteNamed writes for name.
func comparisonFiles(name string) []string { return []string{name + ".json", name + ".csv"} }
