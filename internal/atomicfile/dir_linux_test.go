package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

// A directory swapped for a symbolic link after it was opened (mid-run)
// does not redirect the files: they go into the directory opened.
func TestDirSwappedMidRun(t *testing.T) {
	base := t.TempDir()
	out, elsewhere := filepath.Join(base, "run1"), filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(out) // created
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.WriteFile("a.json", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(out, out+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, out); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFile("b.json", []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Errorf("written through the swapped-in link: %v", names)
	}
	for _, n := range []string{"a.json", "b.json"} {
		if _, err := os.Stat(filepath.Join(out+".moved", n)); err != nil {
			t.Errorf("%s not in the directory opened: %v", n, err)
		}
	}
}

// Replacing keeps the file's mode and says so; temporary files are not
// left behind; a name with a slash is refused.
func TestDirWriteFile(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if again, err := d.WriteFile("p.json", []byte("1"), 0o644); err != nil || again {
		t.Fatalf("first write: %v, replaced %v", err, again)
	}
	os.Chmod(filepath.Join(dir, "p.json"), 0o600)
	if again, err := d.WriteFile("p.json", []byte("2"), 0o644); err != nil || !again {
		t.Fatalf("second write: %v, replaced %v", err, again)
	}
	st, _ := os.Stat(filepath.Join(dir, "p.json"))
	b, _ := os.ReadFile(filepath.Join(dir, "p.json"))
	if st.Mode().Perm() != 0o600 || string(b) != "2" {
		t.Errorf("mode %v content %q; want 0600 kept and the new content", st.Mode().Perm(), b)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("left behind: %v", names)
	}
	if _, err := d.WriteFile("../x", nil, 0o644); err == nil {
		t.Error("a path accepted as a file name")
	}
}

// Another user's link or directory is refused as bad input.
func TestOpenDirUntrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: plants files owned by another user")
	}
	base := t.TempDir()
	target := filepath.Join(base, "target")
	os.Mkdir(target, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(target, link)
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	var ue *UntrustedError
	if _, err := OpenDir(link); !errors.As(err, &ue) || ue.What != "symbolic link" || !badinput.Is(err) {
		t.Errorf("another user's link: %v", err)
	}
	os.Chown(target, 65534, 65534)
	if _, err := OpenDir(target); !errors.As(err, &ue) || ue.What != "directory" {
		t.Errorf("another user's directory: %v", err)
	}
}
