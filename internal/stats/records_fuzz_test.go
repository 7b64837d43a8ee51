package stats

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// FuzzReadDelays: tlab stats' reader of records.csv gives an error or
// per-cell samples within MaxPerSample, each a delay the file holds,
// never a panic.
func FuzzReadDelays(f *testing.F) {
	f.Add([]byte("cell,warmup,delay_ms\nc1,false,0.8\nc1,true,0.9\nc1,false,\nc2,false,1e3\n"), uint64(1))
	f.Add([]byte("cell,warmup,delay_ms\nc1,false,NaN\nc1,false,x\n"), uint64(2))
	f.Add([]byte("warmup,delay_ms\n"), uint64(3))
	f.Fuzz(func(t *testing.T, records []byte, seed uint64) {
		path := filepath.Join(t.TempDir(), "records.csv")
		if err := os.WriteFile(path, records, 0o644); err != nil {
			t.Fatal(err)
		}
		cells, err := readDelays(FileRecords(&results.Run{Dir: filepath.Dir(path)}), seed)
		if err != nil {
			return
		}
		for id, d := range cells {
			if len(d) == 0 || len(d) > MaxPerSample {
				t.Fatalf("cell %q: a sample of %d", id, len(d))
			}
			for _, v := range d {
				if math.IsNaN(v) {
					t.Fatalf("cell %q: a NaN delay in the sample", id)
				}
			}
		}
	})
}
