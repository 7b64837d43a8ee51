package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"

	"tlab/internal/untrusted"
)

// RecordRow is one row of records.csv as a reader of the joined file sees
// it: its cell, whether it is warm-up, and the number columns it asked
// for, in their order, NaN where not measured (empty).
type RecordRow struct {
	Cell   string
	Warmup bool
	// Failed says the record never completed (its error column is not
	// empty): sent and failed, lost, or never sent.
	Failed bool
	// Discarded says the record is past the warm-up but its cell's
	// summary did not use it (in_summary false: an attempt the quality
	// rule discarded, an outlier the rule removed); never set where
	// records.csv has no in_summary column.
	Discarded bool
	Values    []float64
}

// ScanRecords streams the records.csv at path, in file order, handing fn
// each row with the number columns named by need. It is the one reader of
// records.csv: the statistics and the report's plots both read through
// it. A missing column is an error naming it; a number that is not one (a
// hand-edited NaN, a word) is an error naming the file, line and column.
// A file of format 1, which has no cell column, names each cell
// "protocol|profile".
func ScanRecords(path string, need []string, fn func(RecordRow) error) error {
	f, err := untrusted.Open(path) // streamed: a regular file's size is its own bound
	if err != nil {
		return err
	}
	defer f.Close()
	return ScanRecordsFrom(path, f, need, fn)
}

// ScanRecordsFrom is ScanRecords over records already open (path names
// them in errors): the analysis reads a run's records.csv once and hands
// the same rows to every step.
func ScanRecordsFrom(path string, in io.Reader, need []string, fn func(RecordRow) error) error {
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, c := range append([]string{"warmup"}, need...) {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("%s: no column %s", path, c)
		}
	}
	errCol, hasErr := col["error"]
	usedCol, hasUsed := col[InSummaryColumn]
	cellCol, hasCell := col["cell"]
	protoCol, hasProto := col["protocol"]
	profileCol, hasProfile := col["profile"]
	if !hasCell && !(hasProto && hasProfile) {
		return fmt.Errorf("%s: no column cell (nor protocol and profile)", path)
	}
	idx := make([]int, len(need))
	for i, c := range need {
		idx[i] = col[c]
	}
	row := RecordRow{Values: make([]float64, len(need))}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if hasCell && rec[cellCol] != "" {
			row.Cell = rec[cellCol]
		} else {
			row.Cell = rec[protoCol] + "|" + rec[profileCol]
		}
		row.Warmup = rec[col["warmup"]] == "true"
		row.Failed = hasErr && rec[errCol] != ""
		row.Discarded = hasUsed && !row.Warmup && rec[usedCol] == "false"
		for i, k := range idx {
			v, _, err := ParseRecordNumber(rec[k])
			if err != nil {
				return RecordFieldError(path, cr, k, need[i], err)
			}
			row.Values[i] = v
		}
		if err := fn(row); err != nil {
			return err
		}
	}
}

// Measured tells whether a value ScanRecords gave was measured.
func Measured(v float64) bool { return !math.IsNaN(v) }
