package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: every package under internal/ says what it owns in a
// package comment (ARCHITECTURE.md lists them, one row each).
func TestPackageDocs(t *testing.T) {
	err := filepath.WalkDir("../../internal", func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			return err
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		for name, p := range pkgs {
			documented := false
			for _, f := range p.Files {
				if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") {
					documented = true
				}
			}
			if !documented {
				t.Errorf("%s: package %s has no package comment starting \"Package %s \"", dir, name, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
