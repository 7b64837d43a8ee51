package analysis

import (
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// FuzzCellSeries: the series step's reading of records.csv gives an error
// or reduces some cells, never a panic, whatever the file holds; a cell it
// reduces has at most as many points over time as the file has rows (and
// never more than SeriesBins), and no NaN point.
func FuzzCellSeries(f *testing.F) {
	f.Add([]byte("cell,protocol,profile,warmup,sent_ms,delay_ms\nc1,tcp,eth,false,0,0.8\nc1,tcp,eth,true,25,0.9\nc2,h3,eth,false,0,\n"))
	f.Add([]byte("protocol,profile,warmup,sent_ms,delay_ms\ntcp,eth,false,NaN,Inf\n"))
	f.Add([]byte("delay_ms,sent_ms,warmup\n1,2\n"))
	f.Fuzz(func(t *testing.T, records []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), records, 0o644); err != nil {
			t.Fatal(err)
		}
		cells, err := cellSeries(NewView(&results.Run{Dir: dir}, nil))
		if err != nil {
			return
		}
		lines := 1
		for _, b := range records {
			if b == '\n' {
				lines++
			}
		}
		for id, c := range cells {
			if c == nil {
				t.Fatalf("cell %q reduced to nothing", id)
			}
			if len(c.Series) > SeriesBins || len(c.Series) > lines {
				t.Fatalf("cell %q has %d points over time from %d lines", id, len(c.Series), lines)
			}
			for _, p := range append(c.CDF, c.Series...) {
				if p.X != p.X || p.Y != p.Y {
					t.Fatalf("cell %q: a NaN point %v", id, p)
				}
			}
		}
	})
}
