package cellrun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestCellSpecsAreMadeHereAlone: no production file outside this package
// writes a CellSpec literal; a caller compiles its cell (plan.Compile, or
// a plan.Cell of its own as the crosscheck and study C's real stack do)
// and gets the spec from SpecOf, so that a field a capability adds to the
// spec is filled in one place for every runner's caller.
func TestCellSpecsAreMadeHereAlone(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	here := filepath.Join(root, "internal", "cellrun")
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
		if filepath.Dir(path) == here {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "CellSpec" {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "cellrun" {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s writes a cellrun.CellSpec literal: compile a plan.Cell and take cellrun.SpecOf", rel)
				}
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
