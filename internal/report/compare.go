package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/stats"
)

// Compare puts several runs side by side: their rows, each tagged with its
// run's name as a swept value "run", go into one summary and one report in
// out. Plots that need per-request records (CDFs, time series) stay in each
// run's own report.
//
// requirements ("METRIC OP BOUND" each, the first the priority) are
// answered on every run's every network, and the report says which
// stacks meet them on all of them; without any, the runs' own are used
// when every run states the same.
func Compare(dirs []string, out string, requirements []advise.Requirement, profile *qoo.Profile) (*Run, *analysis.Analysis, string, error) {
	merged := &Run{Dir: out, Name: "comparison of " + fmt.Sprint(len(dirs)) + " runs", Plots: []string{"delay_box", "jitter_bars", "bytes_bars"}}
	a := &analysis.Analysis{Requirements: requirements}
	var names []string
	var runsRequire [][]string
	var runsQoO []string // each run's own profile, as its manifest keeps it
	var recordDirs []string
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			return nil, nil, "", err
		}
		runsRequire = append(runsRequire, r.Requirements)
		recordDirs = append(recordDirs, r.Dir)
		if r.Manifest != nil {
			runsQoO = append(runsQoO, string(r.Manifest.QoO))
		} else {
			runsQoO = append(runsQoO, "")
		}
		name := filepath.Base(filepath.Clean(d))
		for slices.Contains(names, name) {
			name += "'"
		}
		names = append(names, name)
		// Each run's own verdicts (its records and seed), labelled with
		// the run: which stack is faster there, by how much.
		vs, err := stats.ForRun(&results.Run{Dir: r.Dir, Manifest: r.Manifest, Rows: r.Rows}, r.seed())
		if err != nil {
			return nil, nil, "", fmt.Errorf("%s: comparisons: %w", d, err)
		}
		for _, v := range vs {
			v.Params = strings.TrimSuffix(name+" / "+v.Params, " / ")
			a.Verdicts = append(a.Verdicts, v)
		}
		for _, row := range r.Rows {
			row.Params = append([]results.Param{{Key: "run", Value: name}}, row.Params...)
			row.Cell = name + "/" + row.Cell
			merged.Rows = append(merged.Rows, row)
		}
	}
	if len(requirements) == 0 && slices.IndexFunc(runsRequire, func(r []string) bool { return !slices.Equal(r, runsRequire[0]) }) < 0 {
		reqs, err := advise.ParseAll(runsRequire[0])
		if err != nil {
			return nil, nil, "", fmt.Errorf("the runs' requirements: %w", err)
		}
		a.Requirements = reqs
	}
	merged.Description = "Runs: " + fmt.Sprint(names) + ". Each plot groups cells by run, then by swept values."
	if err := results.PrepareOut(out); err != nil {
		return nil, nil, "", err
	}
	if err := results.WriteSummaries(out, merged.Rows); err != nil {
		return nil, nil, "", err
	}
	var err error
	if a.Answers, err = analysis.Answers(merged.Rows, a.Requirements); err != nil {
		return nil, nil, "", err
	}
	// The Quality of Outcome: the profile given, or the runs' own when
	// they all keep the same; each run's cells scored from its records.
	if profile == nil && runsQoO[0] != "" && slices.IndexFunc(runsQoO, func(q string) bool { return q != runsQoO[0] }) < 0 {
		f, err := qoo.Parse("the runs' qoo", strings.NewReader(runsQoO[0]))
		if err != nil {
			return nil, nil, "", err
		}
		profile = &f.Profiles[0]
	}
	if profile != nil {
		scores := map[string]qoo.Result{}
		for i, d := range recordDirs {
			s, err := qoo.CellScores(filepath.Join(d, results.RecordsFile), *profile)
			if err != nil {
				return nil, nil, "", fmt.Errorf("%s: quality of outcome: %w", dirs[i], err)
			}
			for cell, r := range s {
				scores[names[i]+"/"+cell] = r
			}
		}
		if len(a.Answers) == 0 {
			a.Answers = advise.Skeleton(merged.Rows)
		}
		a.QoO = profile
		advise.WithQoO(a.Answers, merged.Rows, profile.ID, scores)
	}
	if err := a.Write(out); err != nil {
		return nil, nil, "", err
	}
	path, err := Build(merged, a)
	return merged, a, path, err
}
