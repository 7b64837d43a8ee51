// Package results owns what a run leaves behind: records (one row per
// measured event), summaries (one row per cell), the manifest, and the
// layout of a run directory, with a format version. It is a leaf: it
// imports nothing of tlab's, so that the report, external tools and later
// versions can read a run without the code that made it.
package results

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FormatVersion is the version of the run-directory format this tlab
// writes. Version 1 (before it was recorded) had the same files; version 2
// adds the format and the swept keys to the manifest and keeps summary
// columns in order. Readers accept every version up to this one.
const FormatVersion = 2

// Layout of a run directory:
//
//	scenario.yaml          the scenario as run (overrides applied)
//	manifest.json          tool, machine, sysctls, seeds, calibration, format
//	cells/ID/records.csv   the cell's records, appended and flushed as they come
//	cells/ID/summary.json  the cell's summary row
//	cells/ID/DONE          written last: the cell is whole
//	summary.json, .csv     every finished cell, rewritten after each one
//	records.csv            every finished cell's records, joined at the end
//	report.html, plots/    the report
const (
	ScenarioFile = "scenario.yaml"
	ManifestFile = "manifest.json"
	CellsDir     = "cells"
	DoneFile     = "DONE"
	RecordsFile  = "records.csv"
	SummaryJSON  = "summary.json"
	SummaryCSV   = "summary.csv"
)

// Param is one swept field's value in a cell: Key is the field's dotted
// path in the scenario ("workload.interval"), Value as written there.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// SafeName turns any label (a profile stack, a cell name) into a file or
// directory name: letters, digits, '-', '_', '=' and '.' stay, anything
// else becomes '-'. It is the one sanitiser of file names in tlab (cell
// directories of format 1 were named the same way, so resuming them finds
// their cells).
func SafeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '=', r == '.':
			return r
		}
		return '-'
	}, s)
	if s == "." || s == ".." {
		return "-"
	}
	return s
}

// WriteAtomic writes a file through a temporary one in the same directory
// and renames it into place, so that a reader (or a crash) never sees half
// a file. Every error, of writing, syncing or closing, is returned.
func WriteAtomic(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := fill(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return nil
}

// WriteFileAtomic is WriteAtomic for bytes already in memory.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}
