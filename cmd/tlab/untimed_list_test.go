package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// untimedListFile names the tests of this package that scripts/test runs
// with the untimed half; the timed run skips the same names, so each
// test runs in exactly one of the two.
const untimedListFile = "../../scripts/untimed-cmd-tests"

// testbedMarkers are the identifiers through which a test of this package
// builds a testbed or runs tlab as another user: a test that uses one
// times something and must stay in the timed run.
var testbedMarkers = map[string]bool{"tbtest": true, "testbed": true, "unprivileged": true, "asUser": true}

// TestUntimedCmdTestsNameThisPackagesTests checks scripts/untimed-cmd-tests:
// every name is a test of this package (a misspelt one would leave its
// test in the timed run unnoticed), none is listed twice, and none builds
// a testbed.
func TestUntimedCmdTestsNameThisPackagesTests(t *testing.T) {
	f, err := os.Open(untimedListFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	tests := packageTests(t)
	seen := map[string]bool{}
	for _, name := range listed {
		if seen[name] {
			t.Errorf("%s: %s is listed twice", untimedListFile, name)
		}
		seen[name] = true
		body, ok := tests[name]
		if !ok {
			t.Errorf("%s: %s is not a test of cmd/tlab", untimedListFile, name)
			continue
		}
		ast.Inspect(body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && testbedMarkers[id.Name] {
				t.Errorf("%s: %s uses %s, so it builds a testbed; it belongs in the timed run", untimedListFile, name, id.Name)
				return false
			}
			return true
		})
	}
	if len(listed) < 2 {
		t.Errorf("%s lists %d tests", untimedListFile, len(listed))
	}
}

// packageTests returns the body of every top-level test function in this
// package's test files, by name.
func packageTests(t *testing.T) map[string]*ast.BlockStmt {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	tests := map[string]*ast.BlockStmt{}
	for _, name := range files {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				tests[fn.Name.Name] = fn.Body
			}
		}
	}
	return tests
}
