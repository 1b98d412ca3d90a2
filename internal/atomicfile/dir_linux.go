package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is an output directory (test -o DIR) opened once: every file is
// written relative to its descriptor (openat, renameat), so that a DIR
// swapped for a symbolic link while a run goes on cannot send the files
// elsewhere.
type Dir struct {
	f    *os.File
	name string
}

// UntrustedError is a directory, or a symbolic link on the way to it,
// that belongs to another user: that user could point it, or what is
// written in it, anywhere (root's files replaced by ones of theirs). It
// is the caller's input to change.
type UntrustedError struct {
	Path string
	What string // "symbolic link" or "directory"
	UID  uint32
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s is a %s owned by uid %d, not by you: that user could redirect or replace what is written there; choose a directory of your own", e.Path, e.What, e.UID)
}

// BadInput marks the error as the caller's input (the CLI exits 2).
func (e *UntrustedError) BadInput() bool { return true }

// trusted is an owner whose links and directories may be followed and
// written into: this process's user, or root (who could do anything
// anyway).
func trusted(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// OpenDir creates name (with its parents, 0755) if it is missing and
// opens it. A symbolic link is followed only if this user or root owns
// it, and the directory itself must be theirs: an UntrustedError
// otherwise.
func OpenDir(name string) (*Dir, error) {
	if err := os.MkdirAll(name, 0o755); err != nil {
		return nil, err
	}
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Open(name, flags|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var lst unix.Stat_t
		if lerr := unix.Lstat(name, &lst); lerr == nil && lst.Mode&unix.S_IFMT == unix.S_IFLNK {
			if !trusted(lst.Uid) {
				return nil, &UntrustedError{Path: name, What: "symbolic link", UID: lst.Uid}
			}
			fd, err = unix.Open(name, flags, 0)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if !trusted(st.Uid) {
		unix.Close(fd)
		return nil, &UntrustedError{Path: name, What: "directory", UID: st.Uid}
	}
	return &Dir{f: os.NewFile(uintptr(fd), name), name: name}, nil
}

// Close closes the directory's descriptor.
func (d *Dir) Close() error { return d.f.Close() }

// WriteFile replaces the file name (a name in the directory, not a
// path) as the package's WriteFile does: a synced temporary file renamed
// over it, then the directory synced. A file it replaces keeps its
// permission bits (a 0600 file stays 0600); a new one gets mode.
// replaced says whether there was a file.
func (d *Dir) WriteFile(name string, data []byte, mode fs.FileMode) (replaced bool, err error) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return false, fmt.Errorf("atomicfile: %q is not a file name", name)
	}
	dirfd := int(d.f.Fd())
	perm := uint32(mode.Perm())
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		replaced = true
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			perm = st.Mode & 0o777
		}
	}
	d.removeStale(name)
	tmp, fd, err := d.createTemp(name)
	if err != nil {
		return false, &fs.PathError{Op: "create", Path: d.name + "/" + name, Err: err}
	}
	ok := false
	defer func() {
		if !ok {
			_ = unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	f := os.NewFile(uintptr(fd), d.name+"/"+tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Chmod(fs.FileMode(perm)); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return false, &fs.PathError{Op: "rename", Path: d.name + "/" + name, Err: err}
	}
	ok = true
	return replaced, d.f.Sync()
}

// createTemp creates a fresh temporary file beside name, never following
// a link and never opening one that exists.
func (d *Dir) createTemp(name string) (string, int, error) {
	for range 100 {
		var b [6]byte
		_, _ = rand.Read(b[:])
		tmp := "." + name + ".tmp" + hex.EncodeToString(b[:])
		fd, err := unix.Openat(int(d.f.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		return tmp, fd, err
	}
	return "", -1, unix.EEXIST
}

// removeStale removes name's temporary files a killed writer left, older
// than staleAge (never a live writer's).
func (d *Dir) removeStale(name string) {
	fd, err := unix.Openat(int(d.f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	list := os.NewFile(uintptr(fd), d.name)
	names, _ := list.Readdirnames(-1)
	list.Close()
	prefix := "." + name + ".tmp"
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(int(d.f.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
			time.Since(time.Unix(st.Mtim.Unix())) > staleAge {
			_ = unix.Unlinkat(int(d.f.Fd()), n, 0)
		}
	}
}
