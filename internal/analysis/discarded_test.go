package analysis

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// TestViewReadsWhatTheSummaryUsed: records.csv keeps a re-run cell's
// discarded attempt and the outliers the rule removed (in_summary false);
// the steps see the warm-up (marked) and the rows the summary used, never
// those: of this cell's five rows, the warm-up, 1.0 and 2.0 ms are
// handed on, the discarded attempt's 50 ms and the outlier's 90 ms not.
func TestViewReadsWhatTheSummaryUsed(t *testing.T) {
	dir := t.TempDir()
	csv := "cell,attempt,in_summary,warmup,error,delay_ms\n" +
		"c,1,false,false,,50\n" +
		"c,2,false,true,,7\n" +
		"c,2,true,false,,1\n" +
		"c,2,true,false,,2\n" +
		"c,2,false,false,,90\n"
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	v := NewView(&results.Run{Dir: dir}, func(p string) (io.ReadCloser, error) { return os.Open(p) })
	var got []float64
	var warm int
	err := v.Records([]string{"delay_ms"}, func(r results.RecordRow) error {
		if r.Warmup {
			warm++
		} else {
			got = append(got, r.Values[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if warm != 1 || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("handed on %d warm-up rows and delays %v, want 1 and [1 2]", warm, got)
	}
}
