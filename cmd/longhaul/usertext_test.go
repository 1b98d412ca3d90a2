package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGoVersionText: every "Go >= X" the build tells users matches the
// go directive of go.mod (the version the build needs).
func TestGoVersionText(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	need := string(m[1])
	for _, f := range []string{"../../Makefile", "../../scripts/deps.sh", "../../scripts/go-bootstrap.sh", "../../README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, said := range regexp.MustCompile(`Go >= (\d+\.\d+)`).FindAllSubmatch(b, -1) {
			if string(said[1]) != need {
				t.Errorf("%s tells users to install Go >= %s; go.mod needs %s", f, said[1], need)
			}
		}
	}
}

// TestLabHelpPlainWords: every command's help (the man pages are made
// from it) names the problems in plain words: no internal report or
// package names, "seed", "field report" or issue numbers; lab's names the
// problems it reproduces.
func TestLabHelpPlainWords(t *testing.T) {
	bin := binary(t)
	for _, cmd := range []string{"calc", "audit", "plan", "apply", "rollback", "flows", "analyze", "emulate", "lab", "report", "serve", "test", "exporter", "verify", "version"} {
		out, _, code := exe(t, bin, cmd, "--help")
		if code != 0 {
			continue // not a command of this build
		}
		for _, bad := range []string{"seed", "field report", "runs not used", "buffers-6x-http-downloads", "issue 1", "issue 2", "internal/", "twohost", "tcpflow", "pathmodel", "linkemu", "emupath"} {
			if strings.Contains(strings.ToLower(out), bad) {
				t.Errorf("%s --help says %q:\n%s", cmd, bad, out)
			}
		}
	}
	out, _, _ := exe(t, bin, "lab", "--help")
	if !strings.Contains(out, "(200 ms, 1 Gbit/s, 3-4 MB/s with Ubuntu defaults") {
		t.Errorf("lab --help does not name the buffers problem:\n%s", out)
	}
}
