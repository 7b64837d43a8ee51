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
		if p.Name == "quick" && (p.Cells != 16 || p.Most != 48 || !(math.Abs(p.MostS-3*p.PlannedS) <= 1e-6*p.MostS)) {
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

// TestValidateAsJSON: tlab validate --json says what the text says, as
// numbers: quick's 2 profiles x 4 protocols x 2 to 6 repetitions are 16
// to 48 cells; a suite is one object per part, in the suite's order.
func TestValidateAsJSON(t *testing.T) {
	code, out, errs := run("validate", "quick", "--json")
	if code != exitOK {
		t.Fatalf("validate quick --json: exit %d: %s", code, errs)
	}
	var v struct {
		Name      string `json:"name"`
		Cells     int    `json:"cells"`
		Most      int    `json:"most_cells"`
		Profiles  int    `json:"profiles"`
		Protocols int    `json:"protocols"`
		Reps      int    `json:"repetitions"`
		MaxReps   int    `json:"max_repetitions"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Name != "quick" || v.Cells != 16 || v.Most != 48 || v.Profiles != 2 || v.Protocols != 4 || v.Reps != 2 || v.MaxReps != 6 {
		t.Errorf("validate quick --json: %+v", v)
	}
	code, out, errs = run("validate", "latency-under-load", "--json")
	if code != exitOK {
		t.Fatalf("validate latency-under-load --json: exit %d: %s", code, errs)
	}
	var s struct {
		Suite string `json:"suite"`
		Parts []struct {
			Name string `json:"name"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Suite != "latency-under-load" || len(s.Parts) != 2 || s.Parts[0].Name != "latency-under-load-loop" || s.Parts[1].Name != "latency-under-load-mqtt" {
		t.Errorf("the suite as JSON: %v %+v", err, s)
	}
	if code, _, errs := run("validate", "quick", "--json", "--set", "link.rate=abc"); code != exitUsage || !strings.Contains(errs, "in a --set override") {
		t.Errorf("a bad override with --json: exit %d, %s", code, errs)
	}
}
