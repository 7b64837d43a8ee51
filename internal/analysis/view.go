package analysis

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tlab/internal/results"
	"tlab/internal/stats"
	"tlab/internal/untrusted"
)

// Opener opens a file of the run directory for reading: untrusted.Open
// (a run directory may come from elsewhere: regular files only), or in a
// test one that counts what is read.
type Opener func(path string) (io.ReadCloser, error)

func openFile(path string) (io.ReadCloser, error) { return untrusted.Open(path) }

// View is one reading of a run that every analysis step shares: its rows
// and manifest, its seed, and its records.csv, read at most once (on the
// first step that asks) with the columns every registered step needs, and
// handed to each step from memory in file order.
type View struct {
	Run  *results.Run
	Seed uint64

	open   Opener
	loaded bool
	err    error
	// cols are the columns read (the steps' that the file has), and
	// values each record's numbers in their order, len(cols) a record.
	cols   []string
	cells  []string
	flags  []recordFlags
	values []float64
}

type recordFlags struct{ warmup, failed bool }

// NewView is a view of run whose files open reads (nil: os.Open).
func NewView(run *results.Run, open Opener) *View {
	if open == nil {
		open = openFile
	}
	return &View{Run: run, Seed: Seed(run.Manifest), open: open}
}

// recordsPath is the run's joined records.
func (v *View) recordsPath() string { return filepath.Join(v.Run.Dir, results.RecordsFile) }

// HasRecords says whether the run kept its joined records.
func (v *View) HasRecords() bool {
	_, err := os.Stat(v.recordsPath())
	return err == nil
}

// ErrNoColumn says the records lack a column a step asked for (or the
// step did not declare it): a step whose column is optional skips the run.
var ErrNoColumn = errors.New("the records have no such column (or no step declared it)")

// Records hands fn each record with the number columns named by need, as
// results.ScanRecords would from the file: a column no step declared (in
// Step.Columns) or the file lacks is an error naming it.
func (v *View) Records(need []string, fn func(results.RecordRow) error) error {
	if err := v.load(); err != nil {
		return err
	}
	idx := make([]int, len(need))
	for i, c := range need {
		if idx[i] = slices.Index(v.cols, c); idx[i] < 0 {
			return fmt.Errorf("%s: no column %s: %w", v.recordsPath(), c, ErrNoColumn)
		}
	}
	row := results.RecordRow{Values: make([]float64, len(need))}
	stride := len(v.cols)
	for r, cell := range v.cells {
		row.Cell, row.Warmup, row.Failed = cell, v.flags[r].warmup, v.flags[r].failed
		for i, k := range idx {
			row.Values[i] = v.values[r*stride+k]
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

// records is Records as the statistics take it.
func (v *View) records() stats.Records { return v.Records }

// load reads records.csv once: the columns of every registered step that
// its header has.
func (v *View) load() error {
	if v.loaded {
		return v.err
	}
	v.loaded = true
	v.err = v.read()
	return v.err
}

func (v *View) read() error {
	path := v.recordsPath()
	f, err := v.open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	in := bufio.NewReader(f)
	// The header says which of the steps' columns the file has; it is
	// read again by the scanner from the bytes kept.
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", path, err)
	}
	header, err := csv.NewReader(strings.NewReader(line)).Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range stepColumns() {
		if slices.Contains(header, c) {
			v.cols = append(v.cols, c)
		}
	}
	interned := map[string]string{}
	return results.ScanRecordsFrom(path, io.MultiReader(strings.NewReader(line), in), v.cols, func(row results.RecordRow) error {
		// Every step reads what the summaries used: an attempt the
		// quality rule discarded, or an outlier the rule removed, is in
		// the file (in_summary false) but not in the analysis.
		if row.Discarded {
			return nil
		}
		cell, ok := interned[row.Cell]
		if !ok {
			cell = strings.Clone(row.Cell)
			interned[cell] = cell
		}
		v.cells = append(v.cells, cell)
		v.flags = append(v.flags, recordFlags{row.Warmup, row.Failed})
		v.values = append(v.values, row.Values...)
		return nil
	})
}
