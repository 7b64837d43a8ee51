package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzTime is how much CI fuzzes each target: briefly, to catch a parser
// that a fresh mutation breaks. It is a count of inputs, not a duration:
// Go 1.26's fuzzing coordinator can report "context deadline exceeded" at
// a duration's end on a busy machine without any failing input
// (go.dev/issue/75804, fixed in Go 1.27), and a count has no deadline.
const fuzzTime = "10000x"

// fuzzCap is the most CI fuzzes one target, after its binary is built: a
// target whose inputs are slow (one that writes a run directory per
// input) or a machine that is busy stops there, interrupted as a person
// would press Ctrl-C, which ends Go's fuzzing with what it found so far (a
// failing input still fails the test). On two quiet cores every target
// but the slowest reaches fuzzTime well within it.
const fuzzCap = 30 * time.Second

// TestEveryFuzzTargetRunsBriefly runs each of the module's fuzz targets
// (every func FuzzX in a _test.go file) with Go's fuzzing for fuzzTime,
// so that CI fuzzes every parser on every run. A new target is found
// without listing it here.
//
// Its time is bounded three ways. Each target fuzzes for fuzzCap at
// most. Each package's instrumented test binary is built once (go test
// -c -fuzz), not once per target: the go command links a fuzzing binary
// on every go test -fuzz, and two thirds of the targets share a package.
// And the fuzzing cache is a directory of this run's own, so each run
// starts from the targets' seeds: with Go's cache in GOCACHE, every run's
// new inputs stay and every later run replays them all before it fuzzes,
// a phase that grows with the machine's age.
// (Inputs that fail are still written to the package's testdata/fuzz.)
func TestEveryFuzzTargetRunsBriefly(t *testing.T) {
	if testing.Short() {
		t.Skip("fuzzing is not short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	targets := map[string][]string{} // package directory → targets
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(b), -1) {
			dir := "./" + filepath.ToSlash(must(filepath.Rel(root, filepath.Dir(path))))
			targets[dir] = append(targets[dir], m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	n := 0
	for _, dir := range slices.Sorted(maps.Keys(targets)) {
		began := time.Now()
		flat := strings.ReplaceAll(strings.TrimPrefix(dir, "./"), "/", "_")
		bin := filepath.Join(work, flat+".test")
		build := exec.Command("go", "test", "-c", "-fuzz", ".", "-o", bin, dir)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Errorf("%s: building its fuzzing test binary: %v\n%s", dir, err, out)
			continue
		}
		t.Logf("%s: built for fuzzing in %.0f s", dir, time.Since(began).Seconds())
		for _, name := range targets[dir] {
			n++
			began := time.Now()
			cmd := exec.Command(bin, "-test.run", "^$", "-test.fuzz", "^"+name+"$", "-test.fuzztime", fuzzTime,
				"-test.fuzzcachedir", filepath.Join(work, "cache-"+flat), "-test.timeout", "5m")
			cmd.Dir = filepath.Join(root, dir) // its testdata, as go test runs it
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			interrupt := time.AfterFunc(fuzzCap, func() { cmd.Process.Signal(os.Interrupt) })
			err := cmd.Wait()
			capped := !interrupt.Stop()
			if err != nil {
				t.Errorf("%s %s: %v\n%s", dir, name, err, out.Bytes())
				continue
			}
			execs := "?"
			if m := fuzzExecs.FindAllStringSubmatch(out.String(), -1); len(m) > 0 {
				execs = m[len(m)-1][1]
			}
			stop := ""
			if capped {
				stop = fmt.Sprintf(", stopped at the cap of %v", fuzzCap)
			}
			t.Logf("%s %s: fuzzed %s inputs in %.0f s%s", dir, name, execs, time.Since(began).Seconds(), stop)
		}
	}
	if n < 10 {
		t.Errorf("found %d fuzz targets; the parsers have at least 10", n)
	}
}

// fuzzExecs reads the count of inputs from Go's fuzzing progress lines.
var fuzzExecs = regexp.MustCompile(`execs: (\d+)`)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
