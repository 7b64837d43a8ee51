package experiment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"tlab/internal/cellrun"
	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

// Merge joins the run directories of a scenario's shards into one run
// directory at out, as if one machine had run them: the cells are copied,
// the summaries and records joined in the scenario's order, and the
// manifest lists which machine measured which cell with its calibrations.
// It refuses shards of different scenarios or formats and a cell found
// twice, and returns the scenario's cells that no shard holds (the merge
// is written all the same).
func Merge(dirs []string, out string) (missing []string, err error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("merge: no run directory given")
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("merge: %s is not empty", out)
	}
	var scenarioYAML []byte
	var manifests []*results.Manifest
	for _, d := range dirs {
		m, err := results.ReadManifest(d)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %w", d, err)
		}
		y, err := os.ReadFile(filepath.Join(d, results.ScenarioFile))
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %w", d, err)
		}
		if scenarioYAML == nil {
			scenarioYAML = y
		} else if !bytes.Equal(y, scenarioYAML) {
			return nil, fmt.Errorf("merge: %s ran another scenario than %s (scenario.yaml differs)", d, dirs[0])
		}
		if len(manifests) > 0 && m.Format != manifests[0].Format {
			return nil, fmt.Errorf("merge: %s is in results format %d, %s in %d", d, m.Format, dirs[0], manifests[0].Format)
		}
		manifests = append(manifests, m)
	}
	sc, err := scenario.Parse(filepath.Join(dirs[0], results.ScenarioFile), scenarioYAML)
	for i, m := range manifests[1:] {
		if !reflect.DeepEqual(m.Placement, manifests[0].Placement) {
			return nil, fmt.Errorf("merge: %s placed its cells elsewhere than %s", dirs[i+1], dirs[0])
		}
	}
	if err == nil && manifests[0].Placement != nil {
		// The shards placed their cells at a site (a remote run's).
		sc, err = cellrun.ApplyPlacement(sc, *manifests[0].Placement)
	}
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	all, err := sc.Cells()
	if err != nil {
		return nil, err
	}
	// Which shard holds each whole cell.
	from := map[string]int{}
	for i, d := range dirs {
		done, _ := filepath.Glob(filepath.Join(d, results.CellsDir, "*", results.DoneFile))
		for _, f := range done {
			id := filepath.Base(filepath.Dir(f))
			if j, twice := from[id]; twice {
				return nil, fmt.Errorf("merge: cell %s is in both %s and %s", id, dirs[j], d)
			}
			from[id] = i
		}
	}
	if err := results.PrepareOut(out); err != nil {
		return nil, err
	}
	if err := results.Mkdir(filepath.Join(out, results.CellsDir)); err != nil {
		return nil, err
	}
	m := *manifests[0]
	m.Shard, m.Merged, m.Calibrations, m.Warnings, m.Resumed = "", nil, nil, nil, nil
	m.TotalCells = len(all)
	merged := make([]results.MergedShard, len(dirs))
	for i, d := range dirs {
		sm := manifests[i]
		merged[i] = results.MergedShard{Dir: d, Shard: sm.Shard, Hostname: sm.Hostname, Kernel: sm.Kernel, CPU: sm.CPU, Calibrations: sm.Calibrations}
		m.Warnings = append(m.Warnings, sm.Warnings...)
	}
	var rows []results.Summary
	for _, c := range all {
		i, ok := from[c.ID]
		if !ok {
			missing = append(missing, c.ID)
			continue
		}
		src := results.CellDir(dirs[i], c.ID)
		if err := os.CopyFS(results.CellDir(out, c.ID), os.DirFS(src)); err != nil {
			return missing, fmt.Errorf("merge: copying %s: %w", src, err)
		}
		row, err := results.ReadCellSummary(src, m.Params)
		if err != nil {
			return missing, err
		}
		// A shard an older tlab wrote has no in_summary column yet.
		if err := results.BackfillInSummary(results.CellDir(out, c.ID), max(row.IntOr("attempt", 1), 1), outlierRule(sc.Metrics.RemoveOutliers)); err != nil {
			return missing, fmt.Errorf("merge: cell %s: %w", c.ID, err)
		}
		row.Set("machine", manifests[i].Hostname)
		rows = append(rows, row)
		merged[i].Cells = append(merged[i].Cells, c.ID)
	}
	m.Merged = slices.DeleteFunc(merged, func(s results.MergedShard) bool { return len(s.Cells) == 0 })
	m.Cells = len(rows)
	now := time.Now()
	m.Finished = &now
	if err := results.WriteFileAtomic(filepath.Join(out, results.ScenarioFile), scenarioYAML); err != nil {
		return missing, err
	}
	if err := results.WriteTypedSummaries(out, rows, metrics.ColumnType); err != nil {
		return missing, err
	}
	if err := results.JoinRecords(out); err != nil {
		return missing, err
	}
	if err := results.WriteRecordsParquet(out, m.Params); err != nil {
		return missing, fmt.Errorf("records as Parquet: %w", err)
	}
	return missing, m.Save(out)
}
