package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// Layout of a run directory:
//
//	scenario.yaml         the scenario as run (overrides applied)
//	manifest.json         tool, machine, sysctls, seeds, calibration
//	cells/ID/records.csv  the cell's records, appended and flushed as they come
//	cells/ID/summary.json the cell's summary row
//	cells/ID/DONE         written last: the cell is whole
//	summary.json, .csv    every finished cell, rewritten after each one
//	records.csv           every finished cell's records, joined at the end
const (
	scenarioFile = "scenario.yaml"
	cellsDir     = "cells"
	doneFile     = "DONE"
)

// Sweep runs a scenario's cells into a run directory.
type Sweep struct {
	Scenario *scenario.Scenario
	Dir      string
	// Resume continues a run in Dir: whole cells are kept, a cell that
	// was in flight is run again.
	Resume bool
	// SkipCalibration leaves the calibration out of the manifest.
	SkipCalibration bool
	Progress        func(Progress)
	// Log, when set, hears about steps (calibration, resumed cells).
	Log io.Writer
}

// ErrRunExists is returned when the run directory already holds a run and
// Resume is not set.
var ErrRunExists = errors.New("the directory already holds a run")

// OpenResume loads the scenario a run directory was started with.
func OpenResume(dir string) (*scenario.Scenario, error) {
	s, err := scenario.Load(filepath.Join(dir, scenarioFile))
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	return s, nil
}

func (sw Sweep) logf(format string, args ...any) {
	if sw.Log != nil {
		fmt.Fprintf(sw.Log, format+"\n", args...)
	}
}

// Run executes every cell not yet done and returns every row of the run.
func (sw Sweep) Run(ctx context.Context) ([]Summary, error) {
	sc := sw.Scenario
	cells, err := sc.Cells()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(sw.Dir, scenarioFile)); err == nil && !sw.Resume {
		return nil, fmt.Errorf("%s: %w; continue it with --resume %s or choose another --out", sw.Dir, ErrRunExists, sw.Dir)
	}
	if err := os.MkdirAll(filepath.Join(sw.Dir, cellsDir), 0o755); err != nil {
		return nil, err
	}
	m, err := ReadManifest(sw.Dir)
	if err != nil || !sw.Resume {
		m = newManifest()
		m.Scenario, m.ScenarioFile, m.Seed, m.Cells = sc.Name, sc.File(), sc.Seed, len(cells)
		y, err := sc.YAML()
		if err != nil {
			return nil, err
		}
		if err := writeAtomic(filepath.Join(sw.Dir, scenarioFile), y); err != nil {
			return nil, err
		}
	} else {
		m.Resumed = append(m.Resumed, time.Now())
		m.Finished = nil
	}
	if !sw.SkipCalibration {
		sw.logf("calibrating the emulator (tlab calibrate --quick)...")
		if err := m.calibrateInto(ctx, sc.Emulator.Mode); err != nil {
			return nil, fmt.Errorf("calibration: %w", err)
		}
	}
	if err := m.save(sw.Dir); err != nil {
		return nil, err
	}

	var params []string
	if len(cells) > 0 {
		for _, p := range cells[0].Params {
			params = append(params, p.Key)
		}
	}
	var rows []Summary
	done := 0
	for _, cell := range cells {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		dir := filepath.Join(sw.Dir, cellsDir, cell.ID)
		if _, err := os.Stat(filepath.Join(dir, doneFile)); err == nil {
			prev, err := ReadSummaries(filepath.Join(dir, "summary.json"))
			if err == nil && len(prev) == 1 {
				prev[0].Params = toParams(cell.Params)
				rows = append(rows, prev[0])
				done++
				continue
			}
		}
		// Not done (or never started): start the cell afresh.
		if err := os.RemoveAll(dir); err != nil {
			return rows, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rows, err
		}
		row, err := sw.runCell(ctx, cell, len(cells), dir, params)
		if err != nil {
			return rows, fmt.Errorf("cell %s: %w", cell.ID, err)
		}
		rows = append(rows, row)
		if err := WriteSummaries(sw.Dir, rows); err != nil {
			return rows, err
		}
	}
	if done > 0 {
		sw.logf("resumed: %d of %d cells were already complete", done, len(cells))
	}
	if err := JoinRecords(sw.Dir); err != nil {
		return rows, err
	}
	now := time.Now()
	m.Finished = &now
	return rows, m.save(sw.Dir)
}

func toParams(ps []scenario.Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Key: p.Key, Value: p.Value}
	}
	return out
}

// SpecFor turns a scenario cell into a cell spec.
func SpecFor(cell scenario.Cell, total int) (CellSpec, error) {
	s := cell.Scenario
	link, err := s.LinkFor(cell.Profile)
	if err != nil {
		return CellSpec{}, err
	}
	w := workload.Periodic{
		Interval: s.Workload.Interval.D(), ReqSize: int(s.Workload.Payload), RespSize: s.Workload.ResponseBytes(),
		Duration: s.Duration.D(), Count: s.Count, Warmup: s.Warmup.D(),
	}
	if s.Count > 0 {
		w.Duration = 0
	}
	return CellSpec{
		ID: cell.ID, Index: cell.Index, Total: total, Profile: cell.Profile, Link: link, Protocol: cell.Protocol,
		Workload: w, Settings: s.ProtoSettings(), Seed: s.Seed, Rep: cell.Rep, Params: toParams(cell.Params),
		EmulatorMode: s.Emulator.Mode, RemoveOutliers: s.Metrics.RemoveOutliers,
	}, nil
}

func (sw Sweep) runCell(ctx context.Context, cell scenario.Cell, total int, dir string, params []string) (Summary, error) {
	spec, err := SpecFor(cell, total)
	if err != nil {
		return Summary{}, err
	}
	if cell.Scenario.Capture {
		spec.CaptureDir = filepath.Join(dir, "captures")
	}
	rec, err := createRecords(filepath.Join(dir, "records.csv"), params)
	if err != nil {
		return Summary{}, err
	}
	defer rec.Close()
	// Flush every 100 records: an interruption loses at most those, and
	// the cell is run again anyway.
	n := 0
	row, err := RunCell(ctx, spec, func(r workload.Record) error {
		if err := rec.write(spec, r); err != nil {
			return err
		}
		if n++; n%100 == 0 {
			return rec.flush()
		}
		return nil
	}, sw.Progress)
	if err != nil {
		return Summary{}, err
	}
	if err := rec.Close(); err != nil {
		return Summary{}, err
	}
	if err := WriteSummaries(dir, []Summary{row}); err != nil {
		return Summary{}, err
	}
	// Last: the cell is whole.
	return row, writeAtomic(filepath.Join(dir, doneFile), []byte(time.Now().Format(time.RFC3339)+"\n"))
}

// JoinRecords writes DIR/records.csv from the records of every complete
// cell, in cell order.
func JoinRecords(dir string) error {
	entries, err := os.ReadDir(filepath.Join(dir, cellsDir))
	if err != nil {
		return err
	}
	return writeAtomicFunc(filepath.Join(dir, "records.csv"), func(w io.Writer) error {
		header := true
		for _, e := range entries {
			cdir := filepath.Join(dir, cellsDir, e.Name())
			if _, err := os.Stat(filepath.Join(cdir, doneFile)); err != nil {
				continue
			}
			f, err := os.Open(filepath.Join(cdir, "records.csv"))
			if err != nil {
				return err
			}
			err = copyCSV(w, f, header)
			f.Close()
			if err != nil {
				return err
			}
			header = false
		}
		return nil
	})
}

// copyCSV streams a CSV file, without its header line unless withHeader.
func copyCSV(w io.Writer, r io.Reader, withHeader bool) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if !withHeader {
		if _, err := br.ReadBytes('\n'); err != nil && err != io.EOF {
			return err
		}
	}
	_, err := io.Copy(w, br)
	return err
}
