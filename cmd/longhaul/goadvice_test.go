package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// goAdvice is what make build and make demo (scripts/deps.sh) say on a
// machine without Go: the same way out from either (issue 53).
const goAdvice = "Go is not installed; run as root to bootstrap Go into /usr/local/go (make deps), or install Go >= 1.26 from https://go.dev/dl"

func TestNoGoAdvice(t *testing.T) {
	deps, err := os.ReadFile("../../scripts/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(deps), `"deps: `+goAdvice+`"`) {
		t.Errorf("scripts/deps.sh does not say %q", goAdvice)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-s", "-C", "../..", "build", "GO=longhaul-no-such-go").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make: "+goAdvice+"\n") {
		t.Errorf("make build without Go: %v\n%s\nwant %q", err, out, goAdvice)
	}
}
