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

// verdictFields are a diagnose.Verdict's judgement: what it names, how
// much of the time, and the sentence that says so. (Its Fix may be
// replaced by a producer's plan: test's fix is its host's plan item.)
var verdictFields = []string{"Verdict", "Share", "Shares", "Flags", "Summary"}

// TestOneJudgeBuildsVerdicts: no production code outside diagnose builds
// a diagnose.Verdict, takes its address, or writes its judgement
// (x.Verdict.Verdict, x.Verdict.Summary, ...; in the producers also the
// promoted x.Summary and x.Share): producers hand diagnose evidence and
// keep the verdict it returns.
func TestOneJudgeBuildsVerdicts(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel := strings.TrimPrefix(filepath.ToSlash(path), "../../")
			if strings.HasPrefix(rel, "internal/diagnose/") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, bad := range verdictWrites(f, producer(rel)) {
				t.Errorf("%s: %s outside diagnose: judge through diagnose (Diagnose, PathCause, JudgeReceiver, SndbufHidden)", fset.Position(bad.Pos()), bad.what)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

type badNode struct {
	ast.Node
	what string
}

// verdictWrites finds what TestOneJudgeBuildsVerdicts forbids in f.
func verdictWrites(f *ast.File, producerFile bool) []badNode {
	var out []badNode
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CompositeLit:
			if isDiagnoseVerdict(x.Type) {
				out = append(out, badNode{x, "a diagnose.Verdict built"})
			}
		case *ast.UnaryExpr:
			if s, ok := x.X.(*ast.SelectorExpr); ok && x.Op == token.AND && s.Sel.Name == "Verdict" {
				out = append(out, badNode{x, "a verdict's address taken"})
			}
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				s, ok := l.(*ast.SelectorExpr)
				if !ok || !slices.Contains(verdictFields, s.Sel.Name) {
					continue
				}
				inner, ok := s.X.(*ast.SelectorExpr)
				switch {
				case ok && inner.Sel.Name == "Verdict":
					out = append(out, badNode{x, "a verdict's " + s.Sel.Name + " written"})
				case producerFile && (s.Sel.Name == "Summary" || s.Sel.Name == "Share"):
					out = append(out, badNode{x, "a flow's " + s.Sel.Name + " written"})
				}
			}
		}
		return true
	})
	return out
}

func isDiagnoseVerdict(e ast.Expr) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != "Verdict" {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == "diagnose"
}

// TestVerdictWritesFound: the check finds each way of writing a verdict
// it forbids, and not a copy of one.
func TestVerdictWritesFound(t *testing.T) {
	src := `package p
func f() {
	v := diagnose.Verdict{Verdict: "x"}
	d.Flow.Verdict.Verdict = "y"
	p := &d.Flow.Verdict
	f.Summary = "z"
	x.Verdict = fl[0].Verdict.Verdict
	d.Flow.Verdict = diagnose.Diagnose(tl, in)
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range verdictWrites(f, true) {
		got = append(got, b.what)
	}
	want := []string{"a diagnose.Verdict built", "a verdict's Verdict written", "a verdict's address taken", "a flow's Summary written"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}
