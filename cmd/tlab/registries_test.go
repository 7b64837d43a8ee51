package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"tlab/internal/catalog"
	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/report"
	"tlab/internal/workload"
)

// TestMetricsDocIsCurrent fails when docs/metrics.md differs from what the
// registries generate: regenerate it with
//
//	go run ./cmd/tlab metrics --markdown > docs/metrics.md
func TestMetricsDocIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := catalog.WriteMetricsMarkdown(&b, metrics.Default); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, b.Bytes()) {
		t.Error("docs/metrics.md is stale: run go run ./cmd/tlab metrics --markdown > docs/metrics.md")
	}
	for _, m := range metrics.All() {
		if !strings.Contains(string(doc), "`"+m.Name+"`") {
			t.Errorf("docs/metrics.md lacks %s", m.Name)
		}
	}
}

// TestRegistriesAgree: every workload type decodes with its defaults, and
// what it declares (metrics, table columns, plots) is registered.
func TestRegistriesAgree(t *testing.T) {
	for _, typ := range workload.Types() {
		if strings.HasPrefix(typ.Name, "toy") {
			continue
		}
		// Every protocol with the capability the workload needs.
		sets := []string{"workload={type: " + typ.Name + "}", "plots=[]"}
		needs, err := typ.Needs()
		if err != nil {
			t.Fatal(err)
		}
		capable := proto.NamesWith(needs)
		if len(capable) == 0 {
			t.Errorf("%s: no protocol has the capability it needs", typ.Name)
			continue
		}
		sets = append(sets, "protocols=["+strings.Join(capable, ", ")+"]")
		code, out, errs := run("validate", "--set", sets[0], "--set", sets[1], "--set", sets[len(sets)-1], "quick")
		if code != exitOK {
			t.Errorf("%s with its defaults does not validate over any protocol: %s %s", typ.Name, out, errs)
			continue
		}
		sc, err := experiment.LoadScenario("quick", sets)
		if err != nil {
			t.Fatalf("%s: %v", typ.Name, err)
		}
		info := sc.WorkloadSpec().Info()
		if err := metrics.Default.Check(append(slices.Clone(info.Metrics), info.Table...)); err != nil {
			t.Errorf("%s: %v", typ.Name, err)
		}
		for _, p := range info.Plots {
			if _, ok := report.LookupPlot(p); !ok {
				t.Errorf("%s offers plot %q, which the report does not know", typ.Name, p)
			}
		}
		if info.Type != typ.Name || len(info.Roles) == 0 || info.Describe == "" {
			t.Errorf("%s: incomplete info %+v", typ.Name, info)
		}
	}
}

// TestGuideProfileTableIsCurrent: docs/guide.md's profile table is the
// one tlab profiles --markdown writes from the profiles the emulator runs
// (the hand-kept table it replaced had fallen behind three of them).
func TestGuideProfileTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- generated: tlab profiles --markdown (a test keeps it current) -->\n"
	_, table, ok := strings.Cut(string(doc), marker)
	if !ok {
		t.Fatal("docs/guide.md lacks the profile table's marker")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var b bytes.Buffer
	writeProfilesMarkdown(&b)
	if table+"\n" != b.String() {
		t.Error("docs/guide.md's profile table is stale: replace it with the output of go run ./cmd/tlab profiles --markdown")
	}
	for _, p := range emu.BuiltinProfiles() {
		if !strings.Contains(table, "| "+p.Name+" |") {
			t.Errorf("the table lacks %s", p.Name)
		}
	}
}
