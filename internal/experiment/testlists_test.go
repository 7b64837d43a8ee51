package experiment

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
// -run (with the untimed half, at idle priority when beside); of the two
// timed ones (beside each other when the CPUs are idle as the suite
// starts), one takes besideListFile with -run and the other skips both
// lists.
const (
	// untimedListFile: tests that build no testbed and time nothing.
	untimedListFile = "../../scripts/untimed-experiment-tests"
	// besideListFile: timed tests whose bounds come from the host noise
	// they measure, or that assert no time, run beside the others.
	besideListFile = "../../scripts/beside-experiment-tests"
)

// testbedMarkers are the identifiers through which a test of this package
// builds a testbed: every test that runs cells on real stacks needs root
// first (requireRoot), and a few build their own (testbed, tbtest).
var testbedMarkers = map[string]bool{"requireRoot": true, "tbtest": true, "testbed": true}

// TestSuiteListsNameExperimentsTests checks scripts/untimed-experiment-tests
// and scripts/beside-experiment-tests: every name is a test of this
// package (a misspelt one would leave its test in the first timed run
// unnoticed), none is listed twice or in both lists, no untimed test
// builds a testbed (itself or through a helper of these files), and
// every test on the beside list builds one (one that builds none times
// nothing and belongs with the untimed half).
func TestSuiteListsNameExperimentsTests(t *testing.T) {
	funcs := testFileFuncs(t)
	builds := testbedVia(funcs)
	listOf := map[string]string{}
	for _, file := range []string{untimedListFile, besideListFile} {
		listed := readTestList(t, file)
		for _, name := range listed {
			if other, ok := listOf[name]; ok {
				t.Errorf("%s: %s is listed twice (also in %s)", file, name, other)
			}
			listOf[name] = file
			if !strings.HasPrefix(name, "Test") || funcs[name] == nil {
				t.Errorf("%s: %s is not a test of internal/experiment", file, name)
				continue
			}
			switch via := builds[name]; {
			case file == untimedListFile && via != "":
				t.Errorf("%s: %s builds a testbed (through %s); it belongs in a timed run", file, name, via)
			case file == besideListFile && via == "":
				t.Errorf("%s: %s builds no testbed; it times nothing and belongs in %s", file, name, untimedListFile)
			}
		}
		if len(listed) < 2 {
			t.Errorf("%s lists %d tests", file, len(listed))
		}
	}
}

// testbedVia names, for each function of the test files, the marker
// through which it builds a testbed ("requireRoot", or the helper that
// does), directly or through the test files' own helpers it calls; ""
// for a function that builds none.
func testbedVia(funcs map[string]*ast.BlockStmt) map[string]string {
	via := map[string]string{}
	for changed := true; changed; {
		changed = false
		for name, body := range funcs {
			if via[name] != "" {
				continue
			}
			ast.Inspect(body, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok || via[name] != "" {
					return via[name] == ""
				}
				if testbedMarkers[id.Name] {
					via[name] = id.Name
				} else if id.Name != name && via[id.Name] != "" {
					via[name] = id.Name
				}
				return via[name] == ""
			})
			changed = changed || via[name] != ""
		}
	}
	return via
}

// testFileFuncs returns the body of every top-level function (not method)
// in this package's test files, by name.
func testFileFuncs(t *testing.T) map[string]*ast.BlockStmt {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.BlockStmt{}
	for _, name := range files {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil && fn.Name.Name != "TestMain" && fn.Name.Name != "init" {
				funcs[fn.Name.Name] = fn.Body
			}
		}
	}
	return funcs
}

// readTestList returns the test names in one of scripts/*-experiment-tests:
// one a line, '#' starts a comment.
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
