//go:build unix

package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// trusted refuses a journal directory, one of its parents, or a journal
// file that someone else could have written, as sshd's StrictModes does:
// each must be owned by root or by this process's user, and not writable
// by group or others (a parent may be, with the sticky bit, like /tmp).
// A journal says what rollback writes back as root: one forged by another
// user (a world-writable --state-dir) made root write a cron file and set
// tcp_syncookies=0.
func trusted(path string, isDir bool) error {
	uid := uint32(os.Geteuid())
	check := func(p string, fi fs.FileInfo, leaf bool) error {
		file := leaf && !isDir
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		mode := fi.Mode()
		switch {
		case st.Uid != 0 && st.Uid != uid:
			return distrust("%s is owned by uid %d, not root or this user: a journal there could be forged; use a directory only root can write (chown root %s, chmod 700), or pass --state-dir", p, st.Uid, p)
		case mode&os.ModeSymlink != 0 && file:
			return distrust("%s is a symbolic link: refusing to follow it for a journal; pass --state-dir with the real directory", p)
		case mode.Perm()&0o022 != 0 && (leaf || mode&os.ModeSticky == 0):
			return distrust("%s is writable by group or others (mode %v): a journal there could be forged; chmod go-w %s, or pass --state-dir", p, mode.Perm(), p)
		}
		return nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing to trust yet; it is created 0700
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := check(path, fi, true); err != nil {
		return err
	}
	dir := path
	if !isDir {
		dir = filepath.Dir(path)
	}
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		if p == dir {
			break
		}
		if fi, err := os.Stat(p); err == nil {
			if err := check(p, fi, false); err != nil {
				return err
			}
		}
		if p == "/" || p == "." {
			break
		}
	}
	return nil
}
