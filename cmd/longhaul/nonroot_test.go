package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// asNobody runs bin as uid/gid 65534 (nobody) and returns its outputs
// and exit status; the test skips where switching user is not permitted.
func asNobody(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case errors.Is(err, syscall.EPERM):
		t.Skipf("cannot run as nobody here: %v", err)
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// openToAll makes dir and its parent (t.TempDir's two levels) readable
// and searchable by every user.
func openToAll(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntegrationJournalNotRoot: as a user who cannot read the journal
// (root-owned, 0700, like /var/lib/longhaul/journal), apply --dry-run
// still shows the plan's changes and says what it could not read;
// rollback --list, rollback and a real apply say that the journal needs
// root and how to go on, in one line, instead of a bare
// "permission denied".
func TestIntegrationJournalNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a root-only journal and switch to nobody")
	}
	bin := binary(t)
	openToAll(t, filepath.Dir(bin))
	dir := t.TempDir()
	openToAll(t, dir)
	planFile := filepath.Join(dir, "plan.json")
	if out, errOut, code := exe(t, bin, "plan", "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Chmod(planFile, 0o644); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal")
	if err := os.Mkdir(journal, 0o700); err != nil {
		t.Fatal(err)
	}
	hint := "reading the journal in " + journal + " needs root: run with sudo, or pass --state-dir DIR"

	out, errOut, code := asNobody(t, bin, "apply", "--dry-run", "--state-dir", journal, planFile)
	if code != 0 || !strings.Contains(out, "Dry run: nothing was changed") || !strings.Contains(out, "sysctl net.ipv4.tcp_rmem") ||
		!strings.Contains(out, "the journal in "+journal+" could not be read") || !strings.Contains(out, "needs root") {
		t.Errorf("apply --dry-run as nobody: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"rollback", "--list", "--state-dir", journal},
		{"rollback", "--dry-run", "--state-dir", journal},
	} {
		out, errOut, code := asNobody(t, bin, args...)
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, hint) {
			t.Errorf("%v as nobody: exit %d, stdout %q, stderr %q; want exit 1 and one line %q", args, code, out, errOut, hint)
		}
	}
	// A real apply: refused before anything is read or changed (the
	// journal's lock cannot be taken), saying that it needs root.
	out, errOut, code = asNobody(t, bin, "apply", "--state-dir", journal, planFile)
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "needs root: run with sudo (--dry-run shows the changes without root)") {
		t.Errorf("apply as nobody: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
