package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// TestReadmeGoVersionIsGoMods: the README promises "Go 1.N or newer", so
// go.mod's go line must be 1.N.0: a later patch there (go 1.26.8) makes
// every earlier 1.N toolchain refuse the module or fetch another one.
func TestReadmeGoVersionIsGoMods(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	promised := regexp.MustCompile(`Go (1\.\d+) or newer`).FindSubmatch(readme)
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if promised == nil || goLine == nil {
		t.Fatalf("README's \"Go 1.N or newer\" (%q) or go.mod's go line (%q) not found", promised, goLine)
	}
	if want := string(promised[1]) + ".0"; string(goLine[1]) != want {
		t.Errorf("go.mod says go %s; the README promises Go %s or newer, so it must say go %s", goLine[1], promised[1], want)
	}
	if regexp.MustCompile(`(?m)^toolchain `).Match(mod) {
		t.Errorf("go.mod has a toolchain line: a user's Go %s would fetch another toolchain", promised[1])
	}
}

// TestReadmesTwoCommands: the README's second command is what .ci/run
// runs, and the first (scripts/setup) installs nothing the main job does
// not need: every apt-get and pip in scripts/setup comes after the line
// that ends a plain setup, so a user who only wants `tlab run quick`
// gets no browser, broker or Slurm.
func TestReadmesTwoCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Two commands on a fresh machine.*?```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README: no \"Two commands\" block")
	}
	lines := strings.Split(strings.TrimSpace(string(block[1])), "\n")
	if len(lines) != 2 {
		t.Fatalf("README's two commands are %d lines: %q", len(lines), lines)
	}
	first, _, _ := strings.Cut(lines[0], "#")
	second, _, _ := strings.Cut(lines[1], "#")
	if strings.TrimSpace(first) != "scripts/setup && ./tlab run quick" {
		t.Errorf("README's first command is %q", strings.TrimSpace(first))
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var ciCommands []string
	for _, l := range strings.Split(string(ci), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "set ") && !strings.HasPrefix(l, "cd ") && !strings.HasPrefix(l, "export ") {
			ciCommands = append(ciCommands, l)
		}
	}
	if want := "./" + strings.TrimSpace(second); len(ciCommands) != 1 || ciCommands[0] != want {
		t.Errorf(".ci/run runs %q; the README's test command is %q", ciCommands, want)
	}
	setup, err := os.ReadFile("../../scripts/setup")
	if err != nil {
		t.Fatal(err)
	}
	plain, _, ok := strings.Cut(string(setup), "$tests || exit 0")
	if !ok {
		t.Fatal("scripts/setup: no line ending a plain setup ($tests || exit 0)")
	}
	for _, installer := range []string{"apt-get", "pip install", "dpkg"} {
		for _, l := range strings.Split(plain, "\n") {
			if l = strings.TrimSpace(l); !strings.HasPrefix(l, "#") && strings.Contains(l, installer) {
				t.Errorf("scripts/setup runs %s before its plain part ends: %q", installer, l)
			}
		}
	}
}

// TestQuickTimeIsTheSameEverywhere: tlab presets, tlab validate and the
// README's first command state quick's time from one estimate: presets
// and validate print the same range, and the README's "~N min" is the
// range's upper end in whole minutes (what a newcomer should expect at
// most, before any cell is re-run for a disturbance).
func TestQuickTimeIsTheSameEverywhere(t *testing.T) {
	var presets, validate bytes.Buffer
	runPresets(t.Context(), nil, &presets, io.Discard)
	runValidate(t.Context(), []string{"quick"}, &validate, io.Discard)
	line := regexp.MustCompile(`(?m)^quick +\d+-\d+ cells, ~(\S+)-(\S+) `).FindStringSubmatch(presets.String())
	if line == nil {
		t.Fatalf("tlab presets has no quick line with a range:\n%s", presets.String())
	}
	if want := "about " + line[1] + " to " + line[2] + "."; !strings.Contains(validate.String(), want) {
		t.Errorf("tlab presets says quick takes %s to %s; tlab validate quick says %q", line[1], line[2], strings.TrimSpace(validate.String()))
	}
	most, err := time.ParseDuration(line[2])
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	claim := regexp.MustCompile(`tlab run quick +# 1\..*~(\d+) min`).FindSubmatch(readme)
	if claim == nil {
		t.Fatal("README: the first command's time (~N min) not found")
	}
	if want := fmt.Sprint(int(math.Ceil(most.Minutes()))); string(claim[1]) != want {
		t.Errorf("README says quick takes ~%s min; the estimate's upper end is %v (~%s min)", claim[1], most, want)
	}
}
