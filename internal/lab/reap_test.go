//go:build linux

package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A killed lab's site directories (and their sparse file) are removed by
// the next lab; a live owner's are left alone (they used to stay in /tmp
// and /dev/shm for good).
func TestReapSites(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	gone := filepath.Join(dir, fmt.Sprintf("longhaul-lab-p%d-123", dead.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf("longhaul-lab-p%d-456", os.Getppid()))
	mine := filepath.Join(dir, fmt.Sprintf("longhaul-lab-p%d-789", os.Getpid()))
	other := filepath.Join(dir, "longhaul-lab-1234")
	for _, d := range []string{gone, live, mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "www"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := sparse(filepath.Join(gone, "big")); err != nil {
		t.Fatal(err)
	}
	reapSites(dir)
	for d, want := range map[string]bool{gone: false, live: true, mine: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
