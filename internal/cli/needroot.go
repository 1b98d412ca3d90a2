package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/longhaul/longhaul/internal/apply"
)

// needRoot explains a permission error of apply or rollback to a user who
// is not root: the journal (and, for a real apply or rollback, the host's
// settings) needs root; say so and how to go on, instead of a bare
// "permission denied".
func needRoot(err error, o apply.Options, changes bool) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) || os.Geteuid() == 0 {
		return err
	}
	dir := o.StateDir
	if dir == "" {
		root := o.Root
		if root == "" {
			root = "/"
		}
		dir = filepath.Join(root, apply.DefaultStateDir)
	}
	if changes {
		return fmt.Errorf("changing the host's settings and its journal in %s needs root: run with sudo (--dry-run shows the changes without root): %w", dir, err)
	}
	return fmt.Errorf("reading the journal in %s needs root: run with sudo, or pass --state-dir DIR (a journal directory you can read): %w", dir, err)
}
