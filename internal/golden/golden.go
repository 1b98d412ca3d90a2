// Package golden is the one golden-file check of the tests: a rendered
// output compared with its file under testdata, rewritten with
// `go test -update` (one flag, registered here, for every package).
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the tests render")

// Updating reports whether -update was given.
func Updating() bool { return *update }

// Read returns the golden file's contents, first writing got into it
// (and its directory) with -update.
func Read(t testing.TB, path string, got []byte) []byte {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it, and review the diff)", err)
	}
	return want
}

// Check compares got with the golden file at path and reports the
// difference (-want +got), labelled with what.
func Check(t testing.TB, path, what string, got []byte) {
	t.Helper()
	want := Read(t, path, got)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}
