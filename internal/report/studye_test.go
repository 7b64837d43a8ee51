package report

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"tlab/internal/results"
)

// TestStudyEFiguresDrawWhatTheProfilesWereCalibratedTo: study E's
// networks were calibrated to the spread of the client-to-server packet
// delay (docs/presets.md: "a spread of 4-5.7 ms where the study's jitter
// was 3.11-4.81"), so its jitter figure draws that statistic,
// pkt_owd_std_ms, not the mean step |ΔD|; and the study's RTT is packet
// level, so a figure draws the packet round trip (pkt_rtt_mean_ms) beside
// tlab's per-frame one.
func TestStudyEFiguresDrawWhatTheProfilesWereCalibratedTo(t *testing.T) {
	for name, field := range map[string]string{"jitter_by_size": "pkt_owd_std_ms", "pkt_rtt_by_size": "pkt_rtt_mean_ms", "rtt_by_size": "frame_rtt_p50_ms"} {
		k, ok := LookupPlot(name)
		if !ok {
			t.Errorf("no plot %s", name)
			continue
		}
		if !slices.Contains(k.Needs, field) {
			t.Errorf("plot %s draws %v, want %s", name, k.Needs, field)
		}
	}
}

// TestLiveViewWritesNoStudyETable: the live view draws study E's Fig. 5
// and Table 2 in memory and writes nothing: not the tables the report
// keeps beside its figures (they once landed in the working directory),
// nor anything in the run directory.
func TestLiveViewWritesNoStudyETable(t *testing.T) {
	dir, cwd := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	var rows []results.Summary
	for _, net := range []string{"5g-cband", "5g-degraded", "lte", "wifi-ac"} {
		for i, size := range []float64{4500, 151200} {
			rows = append(rows, results.Summary{Cell: fmt.Sprint(net, i), Profile: net, Protocol: "tcp", Workload: "frames", Rep: 1,
				Fields: []results.Field{{Name: "frame_bytes", Value: size}, {Name: "pkt_rtt_mean_ms", Value: 15 + float64(i)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "e", Params: []string{}, Plots: []string{"rtt_shift_heatmap", "rtt_location"}}).Save(dir); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	s, err := Live(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Figures) != 3 {
		t.Errorf("live figures %d, want Fig. 5 from LTE and Wi-Fi and Table 2", len(s.Figures))
	}
	if left, _ := os.ReadDir(cwd); len(left) != 0 {
		t.Errorf("the live view wrote %v into the working directory", left)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("the live view wrote into the run directory: %v, was %v", after, before)
	}
}
