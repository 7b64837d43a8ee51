package results

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"tlab/internal/untrusted"
)

// InSummaryColumn marks the records a cell's summary was computed from:
// true for the rows of the attempt the summary reports, past the warm-up,
// that the outlier rule (metrics.remove_outliers) kept; false for the
// warm-up, the attempts the quality rule discarded, and removed outliers.
// A percentile over the marked rows, a failed row counting as a delay
// beyond any bound, is the summary's.
const InSummaryColumn = "in_summary"

// MarkSummaryRows rewrites a finished cell's records.csv with the column
// in_summary right after attempt (or its values, when the file has it):
// true for the rows of attempt past the warm-up whose delay outlier does
// not reject; outlier sees the delays of completed rows only (nil: none
// is rejected). A cell without records has nothing to mark.
func MarkSummaryRows(cellDir string, attempt int, outlier func(delayMs float64) bool) error {
	path := filepath.Join(cellDir, RecordsFile)
	f, cr, header, err := openCSV(path, path)
	if err != nil || header == nil {
		return err
	}
	defer f.Close()
	col := func(name string) (int, error) {
		if i := slices.Index(header, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("%s: no column %s", path, name)
	}
	attemptCol, err := col("attempt")
	if err != nil {
		return err
	}
	warmupCol, err := col("warmup")
	if err != nil {
		return err
	}
	delayCol, err := col("delay_ms")
	if err != nil {
		return err
	}
	errorCol, err := col("error")
	if err != nil {
		return err
	}
	at := slices.Index(header, InSummaryColumn)
	out := header
	if at < 0 {
		at = attemptCol + 1
		out = slices.Insert(slices.Clone(header), at, InSummaryColumn)
	}
	want := strconv.Itoa(attempt)
	return WriteAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(out); err != nil {
			return err
		}
		row := make([]string, len(out))
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			used := rec[attemptCol] == want && rec[warmupCol] == "false"
			if used && rec[errorCol] == "" && outlier != nil {
				d, present, err := ParseRecordNumber(rec[delayCol])
				if err != nil {
					return fmt.Errorf("%s:%d: delay_ms: %w", path, line, err)
				}
				used = !present || !outlier(d)
			}
			if len(out) == len(rec) {
				copy(row, rec)
			} else {
				copy(row, rec[:at])
				copy(row[at+1:], rec[at:])
			}
			row[at] = strconv.FormatBool(used)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// BackfillInSummary marks a complete cell that a tlab before in_summary
// wrote (the older cells of a resumed run or of a merged shard), so that
// every cell of the run has the column: the rows of attempt past the
// warm-up, less what rule (given the completed rows' delays, nil: no
// outlier rule) rejects. A cell that has the column is left as it is.
func BackfillInSummary(cellDir string, attempt int, rule func(delays []float64) func(float64) bool) error {
	path := filepath.Join(cellDir, RecordsFile)
	f, cr, header, err := openCSV(path, path)
	if err != nil || header == nil {
		return err
	}
	defer f.Close()
	if slices.Contains(header, InSummaryColumn) {
		return nil
	}
	var outlier func(float64) bool
	if rule != nil {
		attemptCol, warmupCol, delayCol, errorCol := slices.Index(header, "attempt"), slices.Index(header, "warmup"), slices.Index(header, "delay_ms"), slices.Index(header, "error")
		if attemptCol < 0 || warmupCol < 0 || delayCol < 0 || errorCol < 0 {
			return fmt.Errorf("%s: want the columns attempt, warmup, delay_ms and error", path)
		}
		want := strconv.Itoa(attempt)
		var delays []float64
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if rec[attemptCol] != want || rec[warmupCol] != "false" || rec[errorCol] != "" {
				continue
			}
			d, present, err := ParseRecordNumber(rec[delayCol])
			if err != nil {
				return fmt.Errorf("%s:%d: delay_ms: %w", path, line, err)
			}
			if present {
				delays = append(delays, d)
			}
		}
		outlier = rule(delays)
	}
	f.Close()
	return MarkSummaryRows(cellDir, attempt, outlier)
}

// openCSV opens a results CSV through untrusted.Open and reads its header
// (a copy: the reader reuses its records), errors naming the file as
// name. An empty file (not even a header) gives a nil header and no
// error; the caller closes f when the header is not nil.
func openCSV(path, name string) (*os.File, *csv.Reader, []string, error) {
	f, err := untrusted.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	cr := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		f.Close()
		if err == io.EOF {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, cr, slices.Clone(header), nil
}
