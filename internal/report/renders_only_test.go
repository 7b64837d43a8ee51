package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheReportComputesNoStatistic: no production file of the report
// calls what computes a statistic (package stats: comparisons, intervals,
// tests; qoo: scores; metrics' quantiles and Describe: boxes, means) or
// assembles an answer (advise); it draws what package analysis computed
// and wrote (the comparisons, the answer, study D's ξ, Δ+ and boxes, the
// means, the delay boxes, the connections grids). Types and
// constants of those packages (stats.Comparison, stats.Alpha) are what
// it renders and are allowed.
func TestTheReportComputesNoStatistic(t *testing.T) {
	computing := func(pkg, fn string) bool {
		switch pkg {
		case "stats", "qoo":
			return true
		case "advise":
			return fn != "EverywhereSentence" // words, not a computation
		case "metrics":
			// The registry is looked up (Lookup, All); anything else of
			// metrics computes from values: quantiles (boxes), Describe
			// (the connections heatmap's means: the conns-grid step),
			// Jitter and the rest.
			return fn != "Lookup" && fn != "All"
		}
		return false
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(".", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			var sel *ast.SelectorExpr
			switch x := n.(type) {
			case *ast.CallExpr:
				sel, _ = x.Fun.(*ast.SelectorExpr)
			case *ast.KeyValueExpr:
				// A function handed on by name (a template's FuncMap).
				sel, _ = x.Value.(*ast.SelectorExpr)
			}
			if sel == nil {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Obj == nil && computing(pkg.Name, sel.Sel.Name) {
				t.Errorf("%s calls %s.%s: the report renders what package analysis computed", name, pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if files < 10 {
		t.Fatalf("read %d production files: not the report package", files)
	}
}
