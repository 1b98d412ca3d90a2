//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// asRoot skips a test that plants another user's files (it needs to
// chown them).
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: plants files owned by another user")
	}
}

// testFiles is what test -o DIR writes, made small.
func testFiles() map[string]any {
	return map[string]any{"test.json": map[string]string{"schema": "longhaul.test/v1"}, "raw.json": []byte("{}\n"),
		"client-plan.json": map[string]int{"a": 1}}
}

// test -o DIR, where another user planted DIR as a symbolic link to a
// directory of root's: refused (exit 2), root's 0600 files untouched;
// the same when DIR is another user's directory.
func TestTestOutputRefusesForeignLink(t *testing.T) {
	asRoot(t)
	base := t.TempDir()
	victim := filepath.Join(base, "root-only")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(victim, "client-plan.json")
	if err := os.WriteFile(secret, []byte("root's own"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "run1")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "their-dir")
	if err := os.Mkdir(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, theirs} {
		var warn bytes.Buffer
		err := writeFiles("test", dir, testFiles(), &warn)
		var msg bytes.Buffer
		if code := ExitCode(err, &msg); code != exitUsage || strings.Count(msg.String(), "\n") != 1 || !strings.Contains(msg.String(), "owned by uid 65534") {
			t.Errorf("-o %s: exit %d, %q; want a one-line usage error naming the owner", dir, code, msg.String())
		}
	}
	b, _ := os.ReadFile(secret)
	st, _ := os.Stat(secret)
	if string(b) != "root's own" || st.Mode().Perm() != 0o600 {
		t.Errorf("root's file through the link: %q, mode %v", b, st.Mode().Perm())
	}
	if names, _ := os.ReadDir(theirs); len(names) != 0 {
		t.Errorf("wrote into another user's directory: %v", names)
	}
	// A link of one's own is followed.
	mine := filepath.Join(base, "mine")
	if err := os.Symlink(victim, mine); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles("test", mine, testFiles(), &bytes.Buffer{}); err != nil {
		t.Errorf("-o through one's own link: %v", err)
	}
}

// A second run into the same -o DIR keeps the files' modes (root's 0600
// stays 0600) and says, in one line, that it replaced them.
func TestTestOutputKeepsModesAndSaysSo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run1")
	var warn bytes.Buffer
	if err := writeFiles("test", dir, testFiles(), &warn); err != nil {
		t.Fatal(err)
	}
	if warn.Len() != 0 {
		t.Errorf("first run: %q; want nothing said", warn.String())
	}
	if err := os.Chmod(filepath.Join(dir, "client-plan.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles("test", dir, testFiles(), &warn); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"client-plan.json": 0o600, "test.json": 0o644, "raw.json": 0o644} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v; want mode %v", name, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "raw.json")); string(b) != "{}\n" {
		t.Errorf("raw.json holds %q", b)
	}
	if got := warn.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "client-plan.json, raw.json, test.json") || !strings.Contains(got, dir) {
		t.Errorf("second run said %q; want one line naming the replaced files", got)
	}
}
