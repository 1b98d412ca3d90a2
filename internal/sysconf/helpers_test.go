package sysconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree describes a fixture filesystem: keys are slash paths below the root;
// a value "-> target" makes a symlink, a key ending in "/" makes a directory,
// anything else is file content.
type tree map[string]string

// writeTree materialises tr in a fresh temporary directory and returns it.
func writeTree(t *testing.T, tr tree) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range tr {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
