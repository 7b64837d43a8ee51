package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Rows are a run directory's summary rows as they are now. A sweep writes
// summary.json once, at its end (and at the end of a resume), not after
// every cell: rewriting every row after each cell costs a long study time
// that grows with the square of its cells. While a run is in flight (its
// manifest has no finished time) its rows are those of its complete
// cells, each written as the cell completes (cells/ID/summary.json), in
// cell order as records.csv joins them; once it is over, or where no cell
// is complete, they are summary.json's.
func Rows(dir string, m *Manifest, params []string) ([]Summary, error) {
	if m != nil && m.Finished == nil {
		rows, err := doneCellRows(dir, params)
		if err != nil || len(rows) > 0 {
			return rows, err
		}
	}
	return ReadSummaries(filepath.Join(dir, SummaryJSON), params)
}

// doneCellRows reads the summary of every complete cell, in cell order.
func doneCellRows(dir string, params []string) ([]Summary, error) {
	entries, err := os.ReadDir(filepath.Join(dir, CellsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []Summary
	for _, e := range entries {
		cdir := filepath.Join(dir, CellsDir, e.Name())
		if !e.IsDir() || !CellDone(cdir) {
			continue
		}
		row, err := ReadCellSummary(cdir, params)
		if err != nil {
			// A complete cell without its summary is damage, not a
			// file still to come: %v keeps it from reading as one.
			return nil, fmt.Errorf("complete cell %s: %v", e.Name(), err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
