package analysis

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tlab/internal/results"
)

// TestCrossRateSumsTheFlowsPerBin: the load plot's cross traffic line is
// the goodput of every flow summed per 100 ms bin, for first-repetition
// cells that ran cross traffic. By hand: flows f1 and f2 at 0 ms give
// 2 + 3 = 5 Mbit/s at 0 s; f1 alone at 100 ms (written after, at 98 ms:
// it rounds to the same bin) 4 + 1 = 5 at 0.1 s; f2 at 300 ms 6 at 0.3 s.
// A second repetition and a cell without flows are not read.
func TestCrossRateSumsTheFlowsPerBin(t *testing.T) {
	dir := t.TempDir()
	log := "time_ms,flow,bytes,goodput_mbps,delay_ms\n0,f1,0,2,\n0,f2,0,3,\n100,f1,0,4,\n98,f1,0,1,\n300,f2,0,6,\n"
	row := func(cell string, rep int, flows float64) results.Summary {
		s := results.Summary{Cell: cell, Profile: "lan", Protocol: "tcp", Rep: rep}
		s.Set("cross_flows", flows)
		return s
	}
	rows := []results.Summary{row("loaded", 1, 2), row("again", 2, 2), row("unloaded", 1, 0)}
	for _, r := range rows {
		cd := results.CellDir(dir, r.Cell)
		if err := os.MkdirAll(cd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cd, "cross.csv"), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := crossRates(&results.Run{Dir: dir, Rows: rows})
	want := []Point{{0, 5}, {0.1, 5}, {0.3, 6}}
	if len(got) != 1 || !slices.Equal(got["loaded"], want) {
		t.Errorf("cross rates %v, want only the loaded cell's %v", got, want)
	}
}
