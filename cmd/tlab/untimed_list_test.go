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

// The lists by which scripts/test splits this package's tests. Each test
// runs in exactly one go test: the untimed one takes untimedListFile with
// -run; of the two timed ones (beside each other when the CPUs are idle as
// the suite starts), one takes besideListFile with -run and the other
// skips all four lists; then aloneListFile and nobodyListFile, each with
// -run (beside each other when the CPUs are idle).
const (
	// untimedListFile: tests that time nothing and build no testbed, run
	// with the untimed half.
	untimedListFile = "../../scripts/untimed-cmd-tests"
	// besideListFile: timed tests whose bounds come from the host noise
	// they measure, or that assert no time, run beside the others.
	besideListFile = "../../scripts/beside-cmd-tests"
	// aloneListFile: tests that look at the whole machine, run with no
	// other testbed beside them.
	aloneListFile = "../../scripts/alone-cmd-tests"
	// nobodyListFile: the tests that run tlab as nobody, one after
	// another (they share nobody's registry), beside the alone ones.
	nobodyListFile = "../../scripts/nobody-cmd-tests"
)

// testbedMarkers are the identifiers through which a test of this package
// builds a testbed or runs tlab as another user: a test that uses one
// times something and must stay in the timed run.
var testbedMarkers = map[string]bool{"tbtest": true, "testbed": true, "unprivileged": true, "asUser": true}

// otherUserMarkers are the identifiers of the tests that run tlab as
// nobody: they share nobody's registry (cleanUserRegistries removes it),
// so they run one after another in a go test of their own.
var otherUserMarkers = map[string]bool{"unprivileged": true, "asUser": true, "cleanUserRegistries": true}

// wholeMachineMarkers are what a test uses to look at the whole machine
// (tlab temp directories, root-namespace interfaces, tlab cleanup finding
// nothing): any other run's testbed changes those, so such a test runs
// alone.
var wholeMachineMarkers = map[string]bool{"tempRunDirs": true, "linkCount": true, `"Nothing to clean up"`: true}

// TestUntimedCmdTestsNameThisPackagesTests checks scripts/untimed-cmd-tests,
// scripts/beside-cmd-tests, scripts/alone-cmd-tests and
// scripts/nobody-cmd-tests: every name is a test of this package (a
// misspelt one would leave its test in the package's first timed run
// unnoticed), none is listed twice or in two lists, no untimed test builds
// a testbed, the tests that run tlab as nobody are all in the nobody list
// and only they, and every test that looks at the whole machine runs
// alone.
func TestUntimedCmdTestsNameThisPackagesTests(t *testing.T) {
	tests := packageTests(t)
	listOf := map[string]string{}
	for _, file := range []string{untimedListFile, besideListFile, aloneListFile, nobodyListFile} {
		listed := readTestList(t, file)
		for _, name := range listed {
			if other, ok := listOf[name]; ok {
				t.Errorf("%s: %s is listed twice (also in %s)", file, name, other)
			}
			listOf[name] = file
			if _, ok := tests[name]; !ok {
				t.Errorf("%s: %s is not a test of cmd/tlab", file, name)
			}
		}
		if len(listed) < 2 {
			t.Errorf("%s lists %d tests", file, len(listed))
		}
	}
	for name, body := range tests {
		uses := usedMarkers(body)
		switch file := listOf[name]; {
		case file == untimedListFile && uses(testbedMarkers) != "":
			t.Errorf("%s: %s uses %s, so it builds a testbed; it belongs in the timed run", file, name, uses(testbedMarkers))
		case file != nobodyListFile && uses(otherUserMarkers) != "":
			t.Errorf("%s uses %s, so it runs tlab as nobody; it belongs in %s with the others that do", name, uses(otherUserMarkers), nobodyListFile)
		case file == nobodyListFile && uses(otherUserMarkers) == "":
			t.Errorf("%s: %s does not run tlab as nobody (%v)", file, name, otherUserMarkers)
		case file != aloneListFile && uses(wholeMachineMarkers) != "":
			t.Errorf("%s uses %s, so it looks at the whole machine; it belongs in %s", name, uses(wholeMachineMarkers), aloneListFile)
		case file == aloneListFile && uses(wholeMachineMarkers) == "":
			t.Errorf("%s: %s looks at nothing machine-wide (%v); it need not run alone", file, name, wholeMachineMarkers)
		}
	}
}

// readTestList returns the test names in one of scripts/*-cmd-tests: one
// a line, '#' starts a comment.
func readTestList(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
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
	return listed
}

// usedMarkers returns a function that names the first of markers (an
// identifier, or a string literal with its quotes) that body uses, or "".
func usedMarkers(body *ast.BlockStmt) func(markers map[string]bool) string {
	return func(markers map[string]bool) string {
		found := ""
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if markers[n.Name] {
					found = n.Name
				}
			case *ast.BasicLit:
				if markers[n.Value] {
					found = n.Value
				}
			}
			return found == ""
		})
		return found
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
