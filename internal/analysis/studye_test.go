package analysis

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

func studyERow(profile, proto string, rep int, bytes, rttMs float64) results.Summary {
	return results.Summary{Cell: profile + proto, Profile: profile, Protocol: proto, Workload: "frames", Rep: rep, Seed: 1,
		Fields: []results.Field{{Name: "frame_bytes", Value: bytes}, {Name: "pkt_rtt_mean_ms", Value: rttMs}}}
}

// TestStudyEFig5AndTable2ByHand: the percent change from LTE (and Wi-Fi)
// to 5G is (RTT on 5G - RTT there) / RTT there x 100, repetitions
// averaged first; Table 2 takes each protocol's smallest and largest
// frames at both 5G locations. By hand:
//   - tcp 4.5 kB: 5G reps 14 and 16 (mean 15), LTE 20 -> (15-20)/20 = -25 %;
//     Wi-Fi 10 -> (15-10)/10 = +50 %;
//   - tcp 151.2 kB: 5G 18, LTE 24 -> -25 %; no Wi-Fi row, no cell;
//   - Table 2: tcp 4.5 kB 15 / 15.5 ms, 151.2 kB 18 / 17 ms; the
//     36.9 kB size in between is neither end.
func TestStudyEFig5AndTable2ByHand(t *testing.T) {
	rows := []results.Summary{
		studyERow("5g-cband", "tcp", 1, 4500, 14), studyERow("5g-cband", "tcp", 2, 4500, 16),
		studyERow("5g-cband", "tcp", 1, 36900, 16.5),
		studyERow("5g-cband", "tcp", 1, 151200, 18),
		studyERow("lte", "tcp", 1, 4500, 20), studyERow("lte", "tcp", 1, 151200, 24),
		studyERow("wifi-ac", "tcp", 1, 4500, 10),
		studyERow("5g-degraded", "tcp", 1, 4500, 15.5), studyERow("5g-degraded", "tcp", 1, 36900, 16),
		studyERow("5g-degraded", "tcp", 1, 151200, 17),
	}
	got := studyERTTShifts(rows)
	want := []RTTShift{
		{From: "lte", Protocol: "tcp", SizeKB: 4.5, FromMs: 20, On5GMs: 15, Pct: -25},
		{From: "lte", Protocol: "tcp", SizeKB: 151.2, FromMs: 24, On5GMs: 18, Pct: -25},
		{From: "wifi-ac", Protocol: "tcp", SizeKB: 4.5, FromMs: 10, On5GMs: 15, Pct: 50},
	}
	if len(got) != len(want) {
		t.Fatalf("Fig. 5 cells %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.From != w.From || g.Protocol != w.Protocol || !(math.Abs(g.SizeKB-w.SizeKB) <= 1e-9) || !(math.Abs(g.Pct-w.Pct) <= 1e-9) || g.FromMs != w.FromMs || g.On5GMs != w.On5GMs {
			t.Errorf("Fig. 5 cell %d: %+v, want %+v", i, g, w)
		}
	}
	locs := studyERTTLocations(rows)
	wantLocs := []RTTLocation{{Protocol: "tcp", SizeKB: 4.5, MainMs: 15, DegradedMs: 15.5}, {Protocol: "tcp", SizeKB: 151.2, MainMs: 18, DegradedMs: 17}}
	if len(locs) != 2 || locs[0] != wantLocs[0] || !(math.Abs(locs[1].SizeKB-151.2) <= 1e-9) || locs[1].MainMs != 18 || locs[1].DegradedMs != 17 {
		t.Errorf("Table 2 rows %+v, want %+v", locs, wantLocs)
	}
}

// TestStudyEStepWritesItsTables: the step writes Fig. 5's and Table 2's
// values into the run directory (the rows of the test above: tcp 4.5 kB
// from LTE 20 ms to 5G 15 ms, -25 %), and nothing for a run without
// study E's networks.
func TestStudyEStepWritesItsTables(t *testing.T) {
	rows := []results.Summary{
		studyERow("5g-cband", "tcp", 1, 4500, 15), studyERow("lte", "tcp", 1, 4500, 20), studyERow("5g-degraded", "tcp", 1, 4500, 15.5),
	}
	dir := t.TempDir()
	a, err := Only(&results.Run{Dir: dir, Rows: rows}, StudyEStep)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, RTTShiftFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "lte,5g-cband,tcp,4.5,20.000,15.000,-25.000\n"; !strings.HasSuffix(string(b), want) {
		t.Errorf("%s:\n%s\nwant it to end %q", RTTShiftFile, b, want)
	}
	if b, err = os.ReadFile(filepath.Join(dir, RTTLocationFile)); err != nil || !strings.HasSuffix(string(b), "tcp,4.5,15.000,15.500,0.500\n") {
		t.Errorf("%s: %v\n%s", RTTLocationFile, err, b)
	}
	other := t.TempDir()
	a, err = Only(&results.Run{Dir: other, Rows: []results.Summary{studyERow("wifi", "tcp", 1, 4500, 15)}}, StudyEStep)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(other); err != nil || len(a.Files) != 0 {
		t.Errorf("a run without study E's networks wrote %v (%v)", a.Files, err)
	}
}
