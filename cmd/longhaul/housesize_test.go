package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// House limits: a file holds one concept, a function one step.
const (
	maxProdLines = 500
	maxTestLines = 800
	maxFuncLines = 80
)

// TestHouseSizes: no production file over 500 lines, no test file over
// 800, no production function over 80 (issue 26's limits, kept).
func TestHouseSizes(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			lines := strings.Count(string(src), "\n")
			test := strings.HasSuffix(path, "_test.go")
			if limit := map[bool]int{false: maxProdLines, true: maxTestLines}[test]; lines > limit {
				t.Errorf("%s: %d lines, over %d: split it by concept", path, lines, limit)
			}
			if test {
				return nil
			}
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				return err
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
					t.Errorf("%s: func %s is %d lines, over %d", path, fd.Name.Name, n, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoErrorTextParsing: no production code decides anything from an
// error's text (strings functions or comparisons on err.Error()); errors
// are told apart with errors.Is/As and badinput's mark.
func TestNoErrorTextParsing(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("../../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "strings" {
					for _, a := range n.Args {
						if isErrorText(a) {
							t.Errorf("%s: strings.%s on an error's text", fset.Position(n.Pos()), sel.Sel.Name)
						}
					}
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isErrorText(n.X) || isErrorText(n.Y)) {
					t.Errorf("%s: an error's text compared", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isErrorText: the expression is x.Error() for an x named like an error.
func isErrorText(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Error" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && (id.Name == "err" || strings.HasSuffix(id.Name, "Err") || strings.HasPrefix(id.Name, "err"))
}
