package diagnose

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVocabularyComplete: Causes, Flags and Verdicts list every constant
// of their kind declared in the package, so a new cause or flag cannot
// be left out of the vocabulary the lab and report check against.
func TestVocabularyComplete(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string][]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue // iota and implicit repetition: not a name
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v := strings.Trim(lit.Value, `"`)
					switch {
					case strings.HasPrefix(n.Name, "Cause"):
						declared["cause"] = append(declared["cause"], v)
					case strings.HasPrefix(n.Name, "Flag"):
						declared["flag"] = append(declared["flag"], v)
					}
				}
			}
		}
	}
	for kind, list := range map[string][]string{"cause": Causes(), "flag": Flags()} {
		if len(declared[kind]) == 0 {
			t.Fatalf("no %s constant found: the test reads the wrong files", kind)
		}
		for _, v := range declared[kind] {
			if !slices.Contains(list, v) {
				t.Errorf("%s %q is declared but not listed", kind, v)
			}
		}
		if len(list) != len(declared[kind]) {
			t.Errorf("%d %ss listed, %d declared", len(list), kind, len(declared[kind]))
		}
	}
}
