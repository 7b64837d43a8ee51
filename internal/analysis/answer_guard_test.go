package analysis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheAnswerIsAssembledInOnePlace: the calls that assemble an answer
// (evaluating requirements, a skeleton answer per network, adding the
// Quality of Outcome, scoring cells) appear in no production file but
// answer.go, so the run's analysis, a comparison of runs, the live view
// and tlab advise cannot each assemble their own.
func TestTheAnswerIsAssembledInOnePlace(t *testing.T) {
	assembling := map[string]bool{
		"advise.Evaluate": true, "advise.Skeleton": true, "advise.WithQoO": true,
		"qoo.CellScores": true, "qoo.CellScoresOver": true,
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(root, "internal", "analysis", "answer.go")
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if ok && assembling[pkg.Name+"."+sel.Sel.Name] && path != mine {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s calls %s.%s: the answer is assembled by analysis.Answer alone", rel, pkg.Name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go files under %s: not the module", files, root)
	}
}
