package cli

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestManExitStatus: the EXIT STATUS of longhaul(1) lists exactly the
// statuses ExitCode gives the errors the commands return.
func TestManExitStatus(t *testing.T) {
	var documented []string
	for _, s := range ManSections("longhaul") {
		if s.Title == "EXIT STATUS" {
			for _, e := range s.Entries {
				documented = append(documented, e[0])
			}
		}
	}
	got := map[string]bool{}
	for _, err := range []error{nil, errors.New("could not"), usagef("bad"), findingsError{"f"}, driftError{"d"}, invalidError{"i"}} {
		got[string(rune('0'+ExitCode(err, io.Discard)))] = true
	}
	for code := range got {
		found := false
		for _, d := range documented {
			found = found || d == code
		}
		if !found {
			t.Errorf("exit status %s is not in EXIT STATUS %q", code, documented)
		}
	}
	if len(documented) != len(got)+1 || documented[len(documented)-1] != "130, 143" {
		t.Errorf("EXIT STATUS %q; want the %d statuses ExitCode gives and the signals' 130, 143", documented, len(got))
	}
	if SignalStatus(os.Interrupt) != 130 {
		t.Errorf("SIGINT status %d", SignalStatus(os.Interrupt))
	}
}

// TestManEnvironment: ENVIRONMENT says longhaul reads no variable of its
// own; no production source of the binary calls os.Getenv or
// os.LookupEnv (the man page generator's SOURCE_DATE_EPOCH aside).
func TestManEnvironment(t *testing.T) {
	env := ManSections("longhaul")[len(ManSections("longhaul"))-1]
	if env.Title != "ENVIRONMENT" || !strings.Contains(env.Entries[0][1], "reads no variable of its own") {
		t.Fatalf("ENVIRONMENT: %+v", env)
	}
	read := regexp.MustCompile(`os\.(Getenv|LookupEnv)\(`)
	for _, top := range []string{"..", "../../cmd/longhaul"} {
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil && read.Match(b) && !strings.Contains(p, "testdata") {
				t.Errorf("%s reads an environment variable: document it in ManSections' ENVIRONMENT", p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
