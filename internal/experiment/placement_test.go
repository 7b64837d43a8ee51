package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tlab/internal/cellrun"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

// TestAPlacedRunKeepsItsScenarioAsWritten: a run that places its cells
// at a site it was given when it started (as tlab run --remote places
// them at the agent's) writes the scenario as the user wrote it into
// scenario.yaml, and the placement into its manifest; a resume places the
// cells again from the manifest, so that it finds them all done at the
// site (the toy site opened for no cell) rather than compiling the
// written scenario's own cells (ethernet, on a testbed).
func TestAPlacedRunKeepsItsScenarioAsWritten(t *testing.T) {
	src := "name: placed\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\nrepetitions: 2\n"
	written, err := scenario.Parse("placed.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	placement, err := cellrun.PlaceAt(toySiteKind)
	if err != nil {
		t.Fatal(err)
	}
	// The toy site's kind is registered on the network toyland
	// (toy_site_test.go): its one profile.
	if want := (results.Placement{Site: toySiteKind, Network: "toyland", Profiles: []string{"toyland"}}); !slices.Equal(placement.Profiles, want.Profiles) || placement.Site != want.Site || placement.Network != want.Network {
		t.Fatalf("placement %+v, want %+v", placement, want)
	}
	sc, err := cellrun.ApplyPlacement(written, placement)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := sc.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || slices.ContainsFunc(cells, func(c scenario.Cell) bool { return c.Profile != "toyland" || c.Site != toySiteKind }) {
		t.Fatalf("placed cells %+v: want 2, each on toyland at the toy site", cells)
	}
	dir := filepath.Join(t.TempDir(), "run")
	var log bytes.Buffer
	ctx := context.Background()
	sites, err := cellrun.StartSites(ctx, cellrun.SiteSetup{Scenario: sc, Dir: dir, Log: &log}, nil, map[string]any{toySiteKind: nil})
	if err != nil {
		t.Fatal(err)
	}
	sw := Sweep{Scenario: sc, Placed: &cellrun.Placed{Written: written, Placement: placement}, Dir: dir, SkipCalibration: true,
		Quality: cellrun.Quality{Mode: "off"}, Log: &log, Sites: sites}
	rows, err := sw.Run(ctx)
	if err = sites.Finish(err == nil, err); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	got, err := os.ReadFile(filepath.Join(dir, results.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := written.YAML()
	if !bytes.Equal(got, want) {
		t.Errorf("scenario.yaml:\n%s\nwant the scenario as written:\n%s", got, want)
	}
	if strings.Contains(string(got), "toyland") {
		t.Errorf("scenario.yaml names the placement's network:\n%s", got)
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Placement == nil || m.Placement.Site != toySiteKind || !slices.Equal(m.Placement.Profiles, []string{"toyland"}) {
		t.Errorf("the manifest's placement %+v, want %+v", m.Placement, placement)
	}
	// The resume places the cells from the manifest: both are done at
	// the toy site, which it starts and finishes but opens for none.
	log.Reset()
	out, err := Run{Resume: dir, NoCalibration: true, NoReport: true, Log: &log, Quality: "off"}.Execute(ctx)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, log.String())
	}
	defer out.Close()
	if !slices.Equal(out.Scenario.Profiles, []string{"toyland"}) || out.Scenario.SiteOf("toyland") != toySiteKind {
		t.Errorf("the resumed scenario: profiles %v, sites %v; want the placement's", out.Scenario.Profiles, out.Scenario.Sites)
	}
	if life := toySiteLife(log.String()); strings.Join(life, "\n") != "toy: start\ntoy: note\ntoy: finish completed=true" {
		t.Errorf("the toy site's life on resume:\n%s\nwant it started and finished, opened for no cell", strings.Join(life, "\n"))
	}
	if len(out.Rows) != 2 {
		t.Errorf("resume: %d rows, want the 2 done before", len(out.Rows))
	}
}

// TestMergedShardsArePlacedAgain: the shards of a placed run (two, at
// the toy site) keep the scenario as written; their merge places the
// cells from the manifests again, so that it finds every cell (the
// placed scenario's two) in one shard or the other, and refuses shards
// placed differently.
func TestMergedShardsArePlacedAgain(t *testing.T) {
	src := "name: placed-shards\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\nrepetitions: 2\n"
	written, err := scenario.Parse("placed.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	placement, err := cellrun.PlaceAt(toySiteKind)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cellrun.ApplyPlacement(written, placement)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var dirs []string
	for i := 1; i <= 2; i++ {
		shard, err := ParseShard(fmt.Sprintf("%d/2", i))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("shard%d", i))
		var log bytes.Buffer
		sites, err := cellrun.StartSites(ctx, cellrun.SiteSetup{Scenario: sc, Dir: dir, Log: &log}, nil, map[string]any{toySiteKind: nil})
		if err != nil {
			t.Fatal(err)
		}
		sw := Sweep{Scenario: sc, Placed: &cellrun.Placed{Written: written, Placement: placement}, Dir: dir, Shard: shard, SkipCalibration: true,
			Quality: cellrun.Quality{Mode: "off"}, Log: &log, Sites: sites}
		_, err = sw.Run(ctx)
		if err = sites.Finish(err == nil, err); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, log.String())
		}
		dirs = append(dirs, dir)
	}
	missing, err := Merge(dirs, filepath.Join(t.TempDir(), "merged"))
	if err != nil || len(missing) != 0 {
		t.Fatalf("merge: missing %v, %v; want both placed cells found", missing, err)
	}
	// A shard that says it ran elsewhere is refused.
	m, err := results.ReadManifest(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	m.Placement = nil
	if err := m.Save(dirs[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dirs, filepath.Join(t.TempDir(), "merged2")); err == nil || !strings.Contains(err.Error(), "placed its cells elsewhere") {
		t.Errorf("merging shards placed differently: %v, want a refusal", err)
	}
}
