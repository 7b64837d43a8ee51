package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The stages of docs/architecture.md's map, by package (under
// tlab/internal/). Data flows one way: a scenario is compiled into cells,
// a site runs each cell's workload over a stack, records become rows,
// analysis steps compute over them and the report renders. A stage may
// use what an earlier stage defines; an earlier stage never imports a
// later one.
var (
	// measuring: from the scenario to the records.
	measuringStage = []string{"scenario", "plan", "cellrun", "testbed", "emu", "remote", "pathrec", "calibrate",
		"workload", "proto", "cross", "beside", "stacks", "results", "metrics"}
	// analysing: the statistics and the steps over a run's rows.
	analysingStage = []string{"analysis", "stats", "advise", "qoo"}
	// orchestrating: runs, sweeps, suites (they hand the report a renderer).
	orchestrating = []string{"experiment", "cellrun"}
	// scenarioSections are the packages that own a scenario section
	// through a registered decoder: internal/scenario imports none.
	scenarioSections = []string{"cross", "beside", "stacks", "qoo", "explore", "advise"}
)

// forbiddenImport is one rule of the map: pkg must not depend, directly
// or through another package, on any of banned.
type forbiddenImport struct {
	pkg    string
	banned []string
	why    string
}

func architectureRules() []forbiddenImport {
	var rules []forbiddenImport
	for _, p := range measuringStage {
		rules = append(rules, forbiddenImport{p, append(slices.Clone(analysingStage), "report", "experiment"),
			"measuring comes before analysis and the report"})
	}
	for _, p := range analysingStage {
		rules = append(rules, forbiddenImport{p, append(slices.Clone(orchestrating), "report", "plan"),
			"analysis reads a run's rows and records; it runs nothing and renders nothing"})
	}
	rules = append(rules,
		forbiddenImport{"report", append(slices.Clone(orchestrating), "plan"), "the report renders an analysis; it runs nothing"},
		forbiddenImport{"experiment", []string{"report"}, "experiment is handed its renderer (Run.Render): it imports no report"},
		forbiddenImport{"scenario", scenarioSections, "each section's package registers its decoder: scenario imports none of them"},
	)
	return rules
}

// TestArchitectureDataFlowsOneWay checks docs/architecture.md's one-way
// flow on the import graph that `go list -deps` gives.
func TestArchitectureDataFlowsOneWay(t *testing.T) {
	deps := internalDeps(t)
	for _, r := range architectureRules() {
		have, ok := deps[r.pkg]
		if !ok {
			t.Errorf("the map names internal/%s, which go list does not know (moved? update the rules and the map)", r.pkg)
			continue
		}
		for _, b := range r.banned {
			if b == r.pkg {
				continue
			}
			if slices.Contains(have, b) {
				t.Errorf("internal/%s depends on internal/%s: %s", r.pkg, b, r.why)
			}
		}
	}
}

// TestArchitectureRulesSeeAnImport makes sure the rules can fail: the
// dependency data must show what every package is known to import.
func TestArchitectureRulesSeeAnImport(t *testing.T) {
	deps := internalDeps(t)
	for pkg, dep := range map[string]string{"report": "analysis", "analysis": "results", "cellrun": "workload", "experiment": "cellrun"} {
		if !slices.Contains(deps[pkg], dep) {
			t.Errorf("go list says internal/%s does not depend on internal/%s: the rules read the wrong data", pkg, dep)
		}
	}
}

// internalDeps is every tlab/internal package's transitive dependencies
// within tlab/internal, by short name (cmd/tlab's tests run in cmd/tlab).
func internalDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "tlab/internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const prefix = "tlab/internal/"
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], prefix)
		deps[pkg] = []string{}
		for _, d := range f[1:] {
			if strings.HasPrefix(d, prefix) {
				deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, prefix))
			}
		}
	}
	return deps
}
