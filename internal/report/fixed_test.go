package report

import (
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestFigureAtFixedValuesDrawsThoseRowsOnly: a study's figure is drawn at
// its own fixed values (study A's Fig. 1, delay boxes by p at d = 25 ms,
// ../shared/docs/studies.md): delay_box@workload.interval=25ms draws the
// 25 ms rows only (its x axis has 25ms's categories, not 5ms's), under a
// figure of its own beside the plain delay_box, and a value no row has
// is named in a note.
func TestFigureAtFixedValuesDrawsThoseRowsOnly(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for _, iv := range []string{"5ms", "25ms"} {
		rows = append(rows, results.Summary{Cell: "tcp" + iv, Profile: "5g", Protocol: "tcp", Workload: "periodic", Rep: 1, Seed: 1,
			Fields: []results.Field{{Name: "delay_p5_ms", Value: 10.0}, {Name: "delay_p25_ms", Value: 11.0}, {Name: "delay_p50_ms", Value: 12.0},
				{Name: "delay_p75_ms", Value: 13.0}, {Name: "delay_p95_ms", Value: 15.0}},
			Params: []results.Param{{Key: "workload.interval", Value: iv}}})
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "fixed", Params: []string{"workload.interval"},
		Plots: []string{"delay_box", "delay_box@workload.interval=25ms", "delay_box@workload.interval=7ms"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	figs, notes, err := r.figures(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 {
		t.Fatalf("%d figures, want the plain one and the one at 25 ms", len(figs))
	}
	fixed := figs[1]
	if !strings.Contains(fixed.Title, "interval 25ms") || fixed.Name == figs[0].Name {
		t.Errorf("figure at 25 ms: title %q, name %q (plain: %q)", fixed.Title, fixed.Name, figs[0].Name)
	}
	if !strings.Contains(string(fixed.SVG), "25ms") || strings.Contains(strings.ReplaceAll(string(fixed.SVG), "25ms", ""), "5ms") {
		t.Errorf("figure at 25 ms: want the 25ms category alone on its axis")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "7ms") {
		t.Errorf("notes %q, want one about the 7 ms no row has", notes)
	}
}
