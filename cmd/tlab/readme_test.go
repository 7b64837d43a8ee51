package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tlab/internal/proto"
	"tlab/internal/workload"
	"tlab/scenarios"
)

// TestReadmeFollowsTheRegistries: the README's layout names every package
// that holds code, and the README names every preset, workload type and
// protocol that the registries hold, so that a new one cannot land
// without its line.
func TestReadmeFollowsTheRegistries(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	layout := text[strings.Index(text, "## Layout"):]
	err = filepath.WalkDir("../../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		code, _ := filepath.Glob(filepath.Join(path, "*.go"))
		tests, _ := filepath.Glob(filepath.Join(path, "*_test.go"))
		if len(code) == len(tests) {
			return nil // no package code here (or only tests)
		}
		rel, _ := filepath.Rel("../..", path)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(rel) + `\s`).MatchString(layout) {
			t.Errorf("README's layout lacks %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	word := func(w string) bool {
		return regexp.MustCompile("(^|[^a-z0-9-])" + regexp.QuoteMeta(w) + "($|[^a-z0-9-])").MatchString(text)
	}
	for _, kind := range []struct {
		what  string
		names []string
	}{{"preset", scenarios.Names()}, {"workload", workload.Names()}, {"protocol", proto.Names()}} {
		for _, n := range kind.names {
			if strings.HasPrefix(n, "toy") {
				continue
			}
			if !word(n) {
				t.Errorf("README does not name the %s %s", kind.what, n)
			}
		}
	}
	if n := strings.Count(text, "4 (calibrate)") + strings.Count(text, "Exit 0 all pass, 1 some fail"); n > 1 {
		t.Error("README gives calibrate's exit codes more than once")
	}
}
