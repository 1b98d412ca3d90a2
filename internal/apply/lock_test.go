//go:build linux || darwin

package apply

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
)

// A world-writable journal directory is refused before anything in it is
// created or removed: rollback took the lock first, and the lock's open
// (O_CREATE, following links) made root create whatever a planted
// ".lock" symbolic link pointed at; leftovers were removed before the
// check too.
func TestUntrustedDirectoryTouchedByNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "created-by-root")
	if err := os.Symlink(target, filepath.Join(dir, ".lock")); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, ".0001.json.tmp42")
	if err := os.WriteFile(leftover, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{Root: t.TempDir(), StateDir: dir}
	for name, run := range map[string]func() error{
		"rollback":         func() error { _, err := Rollback("", o); return err },
		"rollback id":      func() error { _, err := Rollback("1", o); return err },
		"rollback dry run": func() error { oo := o; oo.DryRun = true; _, err := Rollback("", oo); return err },
		"apply":            func() error { _, err := Apply(plan.Plan{}, o); return err },
		"list":             func() error { _, err := List(o); return err },
		"interrupted":      func() error { _, err := Interrupted(o); return err },
	} {
		err := run()
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "writable by group or others") {
			t.Errorf("%s: %v; want the directory refused as bad input", name, err)
		}
		cmd, _, _ := strings.Cut(name, " ")
		if (cmd == "rollback" || cmd == "apply") && !strings.HasPrefix(err.Error(), cmd+": ") {
			t.Errorf("%s: %q does not say %s refused", name, err, cmd)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Fatalf("%s created the .lock link's target", name)
		}
		if _, err := os.Lstat(leftover); err != nil {
			t.Fatalf("%s removed a file in the untrusted directory: %v", name, err)
		}
	}
}

// In a trusted directory, a .lock that is not a regular file (a link, a
// FIFO) is refused, not opened through or waited on.
func TestLockFileMustBeRegular(t *testing.T) {
	for name, plant := range map[string]func(lock, target string) error{
		"symbolic link": func(lock, target string) error { return os.Symlink(target, lock) },
		"dangling link": func(lock, target string) error { return os.Symlink(target+"-absent", lock) },
		"fifo":          func(lock, _ string) error { return syscall.Mkfifo(lock, 0o600) },
		"directory":     func(lock, _ string) error { return os.Mkdir(lock, 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "journal")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := plant(filepath.Join(dir, ".lock"), target); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				unlock, err := store{dir}.lock()
				if err == nil {
					unlock()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("lock: %v; want a refusal (bad input)", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("lock still waiting after 2 s")
			}
			if b, _ := os.ReadFile(target); string(b) != "keep" {
				t.Errorf("the link's target now holds %q", b)
			}
			if (store{dir}).busy() {
				t.Error("busy() through a planted .lock")
			}
		})
	}
}
