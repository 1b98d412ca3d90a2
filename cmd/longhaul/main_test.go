package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built is the real longhaul binary, built once for the whole run
// (a build per test linked the 20 MB binary some 45 times: about a
// minute of make test); TestMain removes its directory at the end.
var built struct {
	once sync.Once
	dir  string // the run's scratch directory; the binary is in dir/bin
	bin  string
	err  error
}

// binary returns the real longhaul binary for the end-to-end tests,
// building it on first use. Tests may open its directory to every user
// (openToAll), never change the binary itself.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "longhaul-test-"); built.err != nil {
			return
		}
		// A directory of its own under the scratch one: openToAll opens
		// a directory and its parent, which must not be /tmp.
		built.bin = filepath.Join(built.dir, "bin", "longhaul")
		cmd := exec.Command("go", "build", "-o", built.bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// removeBinary removes what binary built (TestMain, after the tests).
func removeBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

func exe(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCmd(t, exec.Command(bin, args...))
}

// runCmd runs cmd to its end: its output and exit status.
func runCmd(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestEndToEnd(t *testing.T) {
	bin := binary(t)

	t.Run("calc json", func(t *testing.T) {
		out, _, code := exe(t, bin, "calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--json")
		var doc struct {
			BDP int64 `json:"bdp_bytes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.BDP != 25_000_000 {
			t.Errorf("exit %d, bdp_bytes %d, output:\n%s", code, doc.BDP, out)
		}
	})

	t.Run("audit json on this host", func(t *testing.T) {
		out, errOut, code := exe(t, bin, "audit", "--json", "--rtt", "200ms", "--rate", "1Gbit/s")
		var doc struct {
			Findings []struct {
				ID, Severity, Observed, Expected, Why, Fix string
			} `json:"findings"`
		}
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, out)
		}
		if len(doc.Findings) == 0 {
			t.Fatal("no findings on a live host")
		}
		for _, f := range doc.Findings {
			if f.ID == "" || f.Severity == "" || f.Observed == "" || f.Fix == "" {
				t.Errorf("incomplete finding %+v", f)
			}
		}
	})

	t.Run("bad input exits 2 with one line", func(t *testing.T) {
		out, errOut, code := exe(t, bin, "calc", "--rtt", "200", "--rate", "1Gbit/s")
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "longhaul: --rtt:") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	// The same fixture and flags as internal/cli's golden file: the real
	// binary prints what the in-process tests pinned.
	t.Run("audit golden on a fixture tree", func(t *testing.T) {
		out, errOut, code := exe(t, bin, "audit", "--root", "../../testdata/hosts/debian-13", "--rtt", "100ms", "--rate", "1Gbit/s", "--flows", "8")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want, err := os.ReadFile("../../internal/cli/testdata/golden/audit-debian-13.golden")
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("binary output differs from the golden file:\n%s", out)
		}
	})
}
