package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestEveryFuzzTargetRunsBriefly runs each of the module's fuzz targets
// (every func FuzzX in a _test.go file) with go test -fuzz for fuzzTime,
// so that CI fuzzes every parser on every run. A new target is found
// without listing it here.
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
	n := 0
	for dir, names := range targets {
		for _, name := range names {
			n++
			began := time.Now()
			cmd := exec.Command("go", "test", "-run", "^$", "-fuzz", "^"+name+"$", "-fuzztime", fuzzTime, "-timeout", "5m", dir)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s %s: %v\n%s", dir, name, err, out)
				continue
			}
			t.Logf("%s %s: fuzzed %s inputs (%.0f s with the build)", dir, name, strings.TrimSuffix(fuzzTime, "x"), time.Since(began).Seconds())
		}
	}
	if n < 10 {
		t.Errorf("found %d fuzz targets; the parsers have at least 10", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
