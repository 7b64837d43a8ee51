package results

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzRecordsToParquet: a truncated or hand-edited records.csv of a cell
// (WriteCellParquet, from which the run's records.parquet is copied) either
// gives an error or becomes a records.parquet with exactly its rows,
// never a panic or a file that silently drops some.
func FuzzRecordsToParquet(f *testing.F) {
	f.Add([]byte("cell,protocol,profile,rep,seq,warmup,sent_ms,delay_ms,workload.interval\nc1,tcp,ethernet,1,0,false,0.0,0.81,25ms\nc1,tcp,ethernet,1,1,false,25.0,,25ms\n"))
	f.Add([]byte("cell,seq,delay_ms\nc1,0,1e400\nc1,x,NaN\n"))
	f.Add([]byte("cell,seq\nc1,0\nc1\n"))
	f.Add([]byte("cell,\"seq\nc1"))
	f.Fuzz(func(t *testing.T, records []byte) {
		dir := memDir(t)
		if err := os.WriteFile(filepath.Join(dir, RecordsFile), records, 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteCellParquet(dir, []string{"workload.interval"})
		if err != nil {
			return
		}
		rows, cerr := csv.NewReader(bytes.NewReader(records)).ReadAll()
		if cerr != nil {
			t.Fatalf("records.csv that does not parse (%v) was converted", cerr)
		}
		pq, err := openParquet(t, filepath.Join(dir, RecordsParquet))
		if os.IsNotExist(err) && len(rows) == 0 {
			return // no header, no records: no file
		}
		if err != nil {
			t.Fatalf("records.parquet written but unreadable: %v", err)
		}
		if pq.NumRows() != int64(len(rows)-1) {
			t.Fatalf("records.parquet holds %d rows, records.csv %d", pq.NumRows(), len(rows)-1)
		}
		// Its columns are the header's, in order, each under its own name.
		if names := parquetColumns(pq); !slices.Equal(names, rows[0]) {
			t.Fatalf("records.parquet's columns %q, records.csv's header %q", names, rows[0])
		}
	})
}

// memDir is a temporary directory on a tmpfs when there is one: the
// Parquet writer syncs its file (WriteAtomic), which on a disk held a
// fuzzing worker to about 140 inputs a second.
func memDir(t *testing.T) string {
	d, err := os.MkdirTemp("/dev/shm", "tlab-fuzz-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
