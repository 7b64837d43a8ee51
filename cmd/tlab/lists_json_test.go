package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"tlab/internal/report"
	"tlab/scenarios"
)

// TestListsAsJSONComeFromTheirRegistries: tlab presets --json and tlab
// plots --json list exactly what the registries hold, in their order,
// each preset with its cells counted (none is empty or invalid).
func TestListsAsJSONComeFromTheirRegistries(t *testing.T) {
	code, out, errs := run("presets", "--json")
	if code != exitOK {
		t.Fatalf("presets --json: exit %d: %s", code, errs)
	}
	var presets []struct {
		Name     string   `json:"name"`
		Cells    int      `json:"cells"`
		PlannedS float64  `json:"planned_s"`
		Suite    []string `json:"suite"`
		Invalid  string   `json:"invalid"`
		Most     int      `json:"most_cells"`
		MostS    float64  `json:"most_planned_s"`
	}
	if err := json.Unmarshal([]byte(out), &presets); err != nil {
		t.Fatalf("presets --json is not JSON: %v\n%s", err, out)
	}
	var names []string
	for _, p := range presets {
		names = append(names, p.Name)
		if p.Invalid != "" || p.Cells <= 0 || p.PlannedS <= 0 {
			t.Errorf("preset %s: cells %d, planned %g s, invalid %q", p.Name, p.Cells, p.PlannedS, p.Invalid)
		}
	}
	// quick repeats until decided, from 2 to 6 repetitions of its 8
	// stack-network pairs: 16 cells at first, 48 at the most, taking
	// three times as long.
	for _, p := range presets {
		if p.Name == "quick" && (p.Cells != 16 || p.Most != 48 || math.Abs(p.MostS-3*p.PlannedS) > 1e-6*p.MostS) {
			t.Errorf("quick: %d to %d cells, %g to %g s; want 16 to 48, the most three times the first", p.Cells, p.Most, p.PlannedS, p.MostS)
		}
	}
	if !slices.Equal(names, scenarios.Names()) {
		t.Errorf("presets --json names %v\nwant the registry's %v", names, scenarios.Names())
	}
	// The text listing is the same list.
	_, text, _ := run("presets")
	for _, p := range presets {
		if !containsLine(text, p.Name) {
			t.Errorf("the text listing lacks %s", p.Name)
		}
	}

	code, out, errs = run("plots", "--json")
	if code != exitOK {
		t.Fatalf("plots --json: exit %d: %s", code, errs)
	}
	var plots []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &plots); err != nil {
		t.Fatalf("plots --json is not JSON: %v", err)
	}
	var want, got []string
	for _, k := range report.PlotKinds() {
		want = append(want, k.Name)
	}
	for _, p := range plots {
		got = append(got, p.Name)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("plots --json %v\nwant the registry's %v", got, want)
	}
}

func containsLine(text, name string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return true
		}
	}
	return false
}
