package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// rateShare matches a share of a rate written as a literal (0.9*x,
// x * 0.95): "ran at the path's rate" is diagnose.AtPathRate's alone.
var rateShare = regexp.MustCompile(`(^|[^0-9.])0?\.(85|9|95)\s*\*|\*\s*0?\.(85|9|95)([^0-9]|$)`)

// knobNames are the files where a cause's word names an emulated path's
// knob (emulate's --policer, a setting's "policer"), not a judgement.
var knobNames = []string{"internal/emupath/", "internal/linkemu/", "internal/cli/emulate.go"}

// TestOneJudgeVocabulary: the producers judge with diagnose's words and
// thresholds. No production file outside diagnose spells a cause or a
// flag diagnose defines as a string literal (it says diagnose.CauseX),
// nor do the matrix's tests of scenario and lab; no production file of
// tcpflow, flows or twohost writes a share of a rate as a literal.
func TestOneJudgeVocabulary(t *testing.T) {
	names := append(diagnose.Causes(), diagnose.Flags()...)
	fset := token.NewFileSet()
	err := filepath.WalkDir("../../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../../")
		test := strings.HasSuffix(path, "_test.go")
		matrix := strings.HasPrefix(rel, "internal/scenario/") || strings.HasPrefix(rel, "internal/lab/")
		if strings.HasPrefix(rel, "internal/diagnose/") || (test && !matrix) ||
			slices.ContainsFunc(knobNames, func(p string) bool { return strings.HasPrefix(rel, p) }) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !test && producer(rel) {
			for i, line := range strings.Split(string(src), "\n") {
				if code, _, _ := strings.Cut(line, "//"); rateShare.MatchString(code) {
					t.Errorf("%s:%d: a rate share as a literal (%s): use diagnose.AtPathRate", rel, i+1, strings.TrimSpace(code))
				}
			}
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(names, s) {
				t.Errorf("%s: %q spelled as a literal: say diagnose's name for it", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// producer: the packages that gather evidence for diagnose's judgement.
func producer(rel string) bool {
	for _, p := range []string{"internal/tcpflow/", "internal/flows/", "internal/twohost/"} {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// TestRateShareLiteral: the pattern finds what it must and only that.
func TestRateShareLiteral(t *testing.T) {
	for s, want := range map[string]bool{
		"x >= 0.9*pathBps": true, "0.95 * r": true, "r*0.85": true, "x >= .9*y": true,
		"quantile(p, 0.9)": false, "0.99*x": false, "x*0.5": false, "1.95*x": false,
	} {
		if got := rateShare.MatchString(s); got != want {
			t.Errorf("rateShare(%q) = %v, want %v", s, got, want)
		}
	}
}
