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

// TestLabHelpPlainWords: lab's help names the problems it reproduces in
// plain words: no internal report names, "seed" or "field report".
func TestLabHelpPlainWords(t *testing.T) {
	out, _, code := exe(t, binary(t), "lab", "--help")
	if code != 0 {
		t.Fatalf("lab --help: exit %d", code)
	}
	for _, bad := range []string{"seed", "field report", "buffers-6x-http-downloads", "issue 16"} {
		if strings.Contains(strings.ToLower(out), bad) {
			t.Errorf("lab --help says %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "(200 ms, 1 Gbit/s, 3-4 MB/s with Ubuntu defaults") {
		t.Errorf("lab --help does not name the buffers problem:\n%s", out)
	}
}
