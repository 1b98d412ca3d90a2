//go:build unix

package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

// A journal another user could have written is refused before it is
// read: rollback used to trust any journal in --state-dir, and one forged
// in a world-writable directory made root write a cron file.
func TestUntrustedJournalsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another user")
	}
	const nobody = 65534
	forged := []byte(`{"id":"0001"}`)
	setup := func(t *testing.T, dirMode os.FileMode, dirOwner, fileOwner int) string {
		base := t.TempDir()
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(base, "journal")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "0001.json")
		if err := os.WriteFile(f, forged, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []error{os.Chmod(dir, dirMode), os.Chown(dir, dirOwner, dirOwner), os.Chown(f, fileOwner, fileOwner)} {
			if c != nil {
				t.Fatal(c)
			}
		}
		return dir
	}
	for name, c := range map[string]struct {
		mode              os.FileMode
		dirOwner, fileOwn int
		want              string
	}{
		"world-writable directory":  {0o777, 0, 0, "writable by group or others"},
		"directory of another user": {0o700, nobody, 0, "owned by uid 65534"},
		"journal of another user":   {0o700, 0, nobody, "owned by uid 65534"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := setup(t, c.mode, c.dirOwner, c.fileOwn)
			list, errList := List(Options{StateDir: dir})
			if errList == nil && len(list) == 1 && list[0].Damaged != "" {
				// The directory passed; the journal is listed as refused.
				errList = refuse("%s", list[0].Damaged)
			}
			_, errRoll := Rollback("1", Options{StateDir: dir})
			for _, err := range []error{errList, errRoll} {
				if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("got %v, want a refusal naming %q", err, c.want)
				}
			}
		})
	}
	// A journal directory only root writes, in a sticky /tmp-like parent,
	// is fine.
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o1777); err != nil {
		t.Fatal(err)
	}
	if _, err := List(Options{StateDir: filepath.Join(parent, "journal")}); err != nil {
		t.Errorf("a new journal directory under a sticky parent: %v", err)
	}
}

// A writer killed between writing a journal's temporary file and
// renaming it leaves ".0001.json.tmp*"; the next apply or rollback, once
// it holds the lock, removes it (they used to stay forever).
func TestLeftoverTempJournalsRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, ".0001.json.tmp4242")
	keep := filepath.Join(dir, "0001.json")
	for _, f := range []string{left, keep} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := store{dir}.lock()
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(left); err == nil {
		t.Error("the leftover temporary journal is still there")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a journal was removed: %v", err)
	}
}
