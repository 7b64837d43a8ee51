package experiment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"tlab/internal/cellrun"

	"tlab/internal/explore"
	"tlab/internal/plan"
	"tlab/internal/results"
)

// autoAlpha is the chance, over a run with repetitions: auto, of any
// decided verdict being wrong: shared (Bonferroni) among its points'
// comparisons.
const autoAlpha = 0.05

// repeatUntilDecided is repetitions: auto. After the sweep's first
// repetitions, each point (a network and a set of swept values) is judged
// as an exploration judges one: every stack against every requirement and
// every pair of stacks on the first requirement's metric, by the t
// mixture's always-valid test (package explore). A point with a
// comparison still open gets one more repetition of every stack (the
// repetition's seed, the same for each), until all are decided or it has
// maxReps; the extra cells are ordinary cells of the run, named after
// their first repetition's cell ("c0001_ethernet_quic_r3").
func (sw Sweep) repeatUntilDecided(ctx context.Context, cells []plan.Cell, maxReps int, rows []results.Summary) ([]results.Summary, error) {
	sc := sw.Scenario
	if len(sw.Requirements) == 0 {
		return rows, cellrun.InputErr(errors.New("repetitions: auto repeats a cell until the answer's verdicts are decided: give the requirements (require: or --require)"))
	}
	comps := explore.Comparisons(sc.Protocols, sw.Requirements)
	key := func(profile string, params []results.Param) string {
		parts := []string{profile}
		for _, p := range params {
			parts = append(parts, p.Key+"="+p.Value)
		}
		return strings.Join(parts, "\x00")
	}
	// The first repetition's cell of each point and protocol: the
	// template of its later ones.
	first := map[string]map[string]plan.Cell{}
	var order []string
	for _, c := range cells {
		k := key(c.Profile, c.Params)
		if first[k] == nil {
			first[k] = map[string]plan.Cell{}
			order = append(order, k)
		}
		if c.Rep == 1 {
			first[k][c.Protocol] = c
		}
	}
	tests := len(order) * len(comps)
	all := cells
	for round := 1; ; round++ {
		// Each point's repetitions so far, protocol by protocol.
		reps := map[string]map[int]map[string]map[string]float64{}
		for _, r := range rows {
			k := key(r.Profile, r.Params)
			if reps[k] == nil {
				reps[k] = map[int]map[string]map[string]float64{}
			}
			if reps[k][r.Rep] == nil {
				reps[k][r.Rep] = map[string]map[string]float64{}
			}
			vals := map[string]float64{}
			for _, f := range r.Fields {
				vals[f.Name] = r.Float(f.Name)
			}
			reps[k][r.Rep][r.Protocol] = vals
		}
		var more []plan.Cell
		for _, k := range order {
			n := len(reps[k])
			var seq []map[string]map[string]float64
			for rep := 1; rep <= n; rep++ {
				if reps[k][rep] != nil {
					seq = append(seq, reps[k][rep])
				}
			}
			open := false
			for _, c := range comps {
				if c.Judge(seq, explore.TMixture, autoAlpha, tests).Label == explore.Undecided {
					open = true
				}
			}
			if !open || n >= maxReps {
				continue
			}
			for _, p := range sc.Protocols {
				t, ok := first[k][p]
				if !ok {
					continue
				}
				more = append(more, t.Repeat(n+1, strings.TrimSuffix(t.ID, "_r1")+"_r"+strconv.Itoa(n+1)))
			}
		}
		if len(more) == 0 {
			return rows, nil
		}
		sw.logf("repetitions: auto, round %d: %d more cells where a verdict is still open", round, len(more))
		all = append(all, more...)
		next := sw
		next.Cells, next.Resume, next.SkipCalibration, next.nextRound = all, true, true, true
		var err error
		if rows, err = next.Run(ctx); err != nil {
			return rows, fmt.Errorf("repetitions: auto: %w", err)
		}
	}
}
