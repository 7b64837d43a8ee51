package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/explore"
	"tlab/internal/scenario"
)

// fakeGrid is fakeExplore's full grid at its coarse points (0 to 10 %
// loss in four intervals: points the map's lattice has), 3 repetitions.
const fakeGrid = `name: fake-grid
profiles: [ethernet]
protocols: [quic, tcp]
workload: {type: periodic, interval: 10ms}
count: 5
warmup: 0s
repetitions: 3
require: ["delay_p99_ms<=1000"]
matrix:
  link.loss: [0%, 2.5%, 5%, 7.5%, 10%]
`

// tlab explore --against-grid on two run directories of fake cells (the
// flip of flipAttempt: quic's delay falls below tcp's above 1.8 % loss):
// the grid's 5 points x 2 stacks x 3 repetitions = 30 cells, the map's
// own count, and at every grid point the same status for both stacks
// (delays near 30 ms against a bound of 1000 ms: both decide "meets",
// the map from its measured points or carried between them), and never
// an opposite best. The rows are written: 2 readings x 5 points x 3
// questions.
func TestTheMapIsComparedWithTheFullGrid(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	sc, err := scenario.Parse("fake-grid", []byte(fakeGrid))
	if err != nil {
		t.Fatal(err)
	}
	gridDir := filepath.Join(dir, "grid")
	sw := Sweep{Scenario: sc, Dir: gridDir, SkipCalibration: true, attempt: flipAttempt(&calls)}
	if _, err := sw.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(file, []byte(fakeExplore), 0o644); err != nil {
		t.Fatal(err)
	}
	mapDir := filepath.Join(dir, "map")
	ex := Exploration{NameOrFile: file, Out: mapDir, NoCalibration: true, NoWhy: true, attempt: flipAttempt(&calls)}
	got, err := ex.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g, err := CompareWithGrid(gridDir, mapDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + g.Text())
	if g.GridPoints != 5 || g.GridCells != 30 || g.MapCells != got.Map.Cells || g.MapPoints != len(got.Map.Points) {
		t.Errorf("grid %d points %d cells, map %d points %d cells; want 5, 30, %d, %d", g.GridPoints, g.GridCells, g.MapPoints, g.MapCells, len(got.Map.Points), got.Map.Cells)
	}
	for _, rows := range [][]explore.GridRow{g.Rows, g.SameRule} {
		if len(rows) != 15 {
			t.Fatalf("%d rows, want 5 points x 3 questions", len(rows))
		}
	}
	for _, r := range g.Rows {
		if r.Question != "best" && (r.Grid != "meets" || r.Map != "meets") {
			t.Errorf("at %v %s: grid %s, map %s (%s): want meets for both", r.Values, r.Question, r.Grid, r.Map, r.How)
		}
		if r.Kind == explore.DisagreeOpposite {
			t.Errorf("at %v: opposite decisions: %s", r.Values, r.Why)
		}
	}
	// The map decides quic best at 10 % loss (2.5 x 8.2 x 2 = 41 ms
	// apart, noise 2 ms), and so does the grid (intervals far apart).
	last := g.Rows[len(g.Rows)-1]
	if last.Question != "best" || last.Values[0] != 10 || last.Grid != "quic" || last.Map != "quic" {
		t.Errorf("at 10 %% loss: %+v, want quic best for both", last)
	}
	if err := g.Write(mapDir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(mapDir, GridFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(string(b)), "\n")); n != 31 {
		t.Errorf("%s: %d lines, want 1 + 2 x 15", GridFile, n)
	}
}

// explore-points.csv as a monotone map writes it: a measured point, a
// point only inferred (repetitions 0, how inferred: read, its decisions
// marked inferred, the best "none" where both stacks fail) and a point
// planned but never measured (repetitions 0, nothing inferred: left out).
func TestTheMapsInferredPointsAreRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), explore.PointsFile)
	csv := `point,link.loss,stack,repetitions,status,confidence,best,priority_metric,priority_mean,settled,how
link.loss=1%,1,quic,3,fails,0.99,false,m,50,true,measured
link.loss=1%,1,tcp,3,fails,0.99,false,m,50,true,measured
link.loss=2%,2,quic,0,fails,NA,false,m,NA,true,inferred
link.loss=2%,2,tcp,0,fails,NA,false,m,NA,true,inferred
link.loss=0%,0,quic,0,undecided,NA,false,m,NA,false,
link.loss=0%,0,tcp,0,undecided,NA,false,m,NA,false,
`
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	pts, err := readMapPoints(path, []explore.Param{{Path: "link.loss", Unit: "%"}}, []string{"quic", "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 {
		t.Fatalf("%d points read, want 2 (the measured and the inferred one): %+v", len(pts), pts)
	}
	if pts[0].Reps != 3 || pts[0].Inferred[0] || pts[0].Decisions[2] != explore.None || pts[0].Inferred[2] {
		t.Errorf("the measured point: %+v, want 3 repetitions, none inferred, best none", pts[0])
	}
	if p := pts[1]; p.Values[0] != 2 || p.Reps != 0 || !p.Inferred[0] || !p.Inferred[1] || p.Decisions[2] != explore.None || !p.Inferred[2] {
		t.Errorf("the inferred point: %+v, want 0 repetitions, both statuses and the best (none) inferred", p)
	}
}

// A point every status of which a floor decided is read (with no
// repetition of its own), its statuses and its best marked as the
// floor's; one with a floor beside a measured status marks that one only.
func TestTheMapsFloorPointsAreRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), explore.PointsFile)
	csv := `point,link.rtt,stack,repetitions,status,confidence,best,priority_metric,priority_mean,settled,how,floor
link.rtt=45ms,45,quic,0,fails,1,false,m,NA,true,floor,100
link.rtt=45ms,45,tcp,0,fails,1,false,m,NA,true,floor,100
link.rtt=25ms,25,quic,2,fails,0.99,false,m,50,true,measured,0
link.rtt=25ms,25,tcp,2,fails,1,false,m,50,true,floor,100
`
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	pts, err := readMapPoints(path, []explore.Param{{Path: "link.rtt", Unit: "ms"}}, []string{"quic", "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 {
		t.Fatalf("%d points read, want 2: %+v", len(pts), pts)
	}
	if p := pts[0]; p.Reps != 0 || !p.ByFloor[0] || !p.ByFloor[1] || p.Decisions[2] != explore.None || !p.ByFloor[2] || p.Inferred[2] {
		t.Errorf("the floor's point: %+v, want both statuses and the best (none) by the floor", p)
	}
	if p := pts[1]; p.ByFloor[0] || !p.ByFloor[1] || p.ByFloor[2] {
		t.Errorf("the measured point: %+v, want tcp's status alone by the floor", p)
	}
}
