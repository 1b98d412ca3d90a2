// Package atomicfile replaces files so that a crash or a kill leaves
// either the old content or the new, never a mix and never a partial
// file: the journal and persistence files of apply, and reports.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteFile replaces name with data: a synced temporary file in the same
// directory renamed over it, then the directory synced, so that a crash
// leaves either the old or the new content, never a mix.
//
// Temporary files a killed writer left beside name (older than a minute,
// so never a live writer's) are removed first.
func WriteFile(name string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(name)
	removeStale(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp*")
	if err != nil {
		// Named as the file asked for, not the temporary one: "create
		// out/r.html: no such file or directory".
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &fs.PathError{Op: "create", Path: name, Err: err}
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// staleAge is how old a temporary file must be to count as a dead
// writer's: a write takes milliseconds.
const staleAge = time.Minute

// removeStale removes name's temporary files older than staleAge.
func removeStale(name string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(name), "."+globEscape(filepath.Base(name))+".tmp*"))
	for _, m := range matches {
		if st, err := os.Lstat(m); err == nil && st.Mode().IsRegular() && time.Since(st.ModTime()) > staleAge {
			os.Remove(m)
		}
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`)
	return r.Replace(s)
}
