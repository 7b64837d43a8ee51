package results

import (
	"path/filepath"
	"testing"
)

// TestSummarySeedsReadBackExactly: a repetition's derived seed is a
// 64-bit integer, most of them above 2^53, where a float64 keeps only 53
// bits of mantissa: 2^53 + 1 rounds to 2^53 (to even), and 2^64 − 59 (the
// largest 64-bit prime) rounds to 2^64, which no uint64 holds. Read
// through a float64, a resumed or merged run named another seed than the
// cell ran with.
func TestSummarySeedsReadBackExactly(t *testing.T) {
	dir := t.TempDir()
	rows := []Summary{
		{Cell: "c1", Profile: "wifi", Protocol: "tcp", Workload: "periodic", Rep: 2, Seed: 18446744073709551557},
		{Cell: "c2", Profile: "wifi", Protocol: "quic", Workload: "periodic", Rep: 3, Seed: 9007199254740993}, // 2^53 + 1
	}
	if err := WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummaries(filepath.Join(dir, SummaryJSON), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d rows, want 2", len(got))
	}
	for i, r := range got {
		if r.Seed != rows[i].Seed || r.Rep != rows[i].Rep {
			t.Errorf("row %d: seed %d rep %d, want seed %d rep %d", i, r.Seed, r.Rep, rows[i].Seed, rows[i].Rep)
		}
	}
}
