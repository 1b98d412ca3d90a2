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

// TestArchitectureRows: ARCHITECTURE.md's package table has one row per
// package of the module and none for a package that is gone, and a row
// says what the package owns in a line or two, not its changelog.
func TestArchitectureRows(t *testing.T) {
	b, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## Packages")
	end := strings.Index(doc, "## Dependencies")
	if start < 0 || end < start {
		t.Fatal("ARCHITECTURE.md has no Packages section before Dependencies")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if strings.HasPrefix(name, "internal/") || strings.HasPrefix(name, "cmd/") {
			rows[name] = strings.TrimSpace(cells[2])
		}
	}
	var pkgs []string
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(dir string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() == "testdata" {
				if d != nil && d.IsDir() && d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return err
			}
			gos, _ := filepath.Glob(filepath.Join(dir, "*.go"))
			if len(gos) > 0 {
				pkgs = append(pkgs, strings.TrimPrefix(dir, "../../"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pkgs {
		row, ok := rows[p]
		switch {
		case !ok:
			t.Errorf("ARCHITECTURE.md has no row for %s", p)
		case len(row) > 300:
			t.Errorf("ARCHITECTURE.md's row for %s is %d characters: a line or two of what it owns", p, len(row))
		}
		delete(rows, p)
	}
	for p := range rows {
		t.Errorf("ARCHITECTURE.md has a row for %s, which is no package of the module", p)
	}
}
