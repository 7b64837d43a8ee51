package results

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"tlab/internal/untrusted"
)

// CellDir is where a cell's files live in a run directory.
func CellDir(runDir, cellID string) string { return filepath.Join(runDir, CellsDir, cellID) }

// CellDone tells whether a cell's directory holds a whole cell.
func CellDone(cellDir string) bool {
	_, err := os.Stat(filepath.Join(cellDir, DoneFile))
	return err == nil
}

// MarkDone writes a cell's DONE marker, last, once everything else of the
// cell is durable.
func MarkDone(cellDir string) error {
	return WriteFileAtomic(filepath.Join(cellDir, DoneFile), []byte(time.Now().Format(time.RFC3339)+"\n"))
}

// ReadCellSummary reads the one summary row of a complete cell.
func ReadCellSummary(cellDir string, params []string) (Summary, error) {
	rows, err := ReadSummaries(filepath.Join(cellDir, SummaryJSON), params)
	if err != nil {
		return Summary{}, err
	}
	if len(rows) != 1 {
		return Summary{}, fmt.Errorf("%s: %d rows, want 1", cellDir, len(rows))
	}
	return rows[0], nil
}

// JoinRecords writes DIR/records.csv from the records of every complete
// cell, in cell order. Every cell of a run has the same columns; a cell
// whose header differs is an error, not a silently shifted column.
func JoinRecords(dir string) error {
	entries, err := os.ReadDir(filepath.Join(dir, CellsDir))
	if err != nil {
		return err
	}
	return WriteAtomic(filepath.Join(dir, RecordsFile), func(w io.Writer) error {
		var header []byte
		for _, e := range entries {
			cdir := filepath.Join(dir, CellsDir, e.Name())
			if !CellDone(cdir) {
				continue
			}
			f, err := untrusted.Open(filepath.Join(cdir, RecordsFile))
			if err != nil {
				return err
			}
			br := bufio.NewReaderSize(f, 1<<20)
			h, err := br.ReadBytes('\n')
			if err != nil && err != io.EOF {
				f.Close()
				return err
			}
			if header == nil {
				header = h
				if _, err := w.Write(h); err != nil {
					f.Close()
					return err
				}
			} else if !bytes.Equal(h, header) {
				f.Close()
				return fmt.Errorf("cell %s: its records have other columns than the first cell's", e.Name())
			}
			_, err = io.Copy(w, br)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
}
