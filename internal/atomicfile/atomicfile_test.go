package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	st, _ := os.Stat(name)
	if err != nil || string(b) != "new content" || st.Mode().Perm() != 0o644 {
		t.Errorf("content %q mode %v err %v", b, st.Mode().Perm(), err)
	}
	// A failed write leaves the old file and no temporary file behind.
	missing := filepath.Join(dir, "missing", "f")
	if err := WriteFile(missing, []byte("x"), 0o644); err == nil || err.Error() != "create "+missing+": no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		// The file asked for, not the temporary one the user never named.
		t.Errorf("write into a missing directory: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// A killed writer's temporary file is swept by the next write; a
	// fresh one (a live writer's) is not.
	stale, fresh := filepath.Join(dir, ".f.tmp111"), filepath.Join(dir, ".f.tmp222")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a live writer's temporary file removed: %v", err)
	}
}
