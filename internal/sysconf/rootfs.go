package sysconf

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks bounds symlink resolution, like the kernel's MAXSYMLINKS.
const maxSymlinks = 40

// devNull is the path whose symlinks mask configuration files.
const devNull = "/dev/null"

// node is a path below a root after its symlinks have been followed.
type node struct {
	path string      // final path, slash-separated and absolute within the root
	info fs.FileInfo // Lstat of the final path; nil for /dev/null absent from the tree
}

// isNull reports whether the node is /dev/null, the systemd masking target.
func (n node) isNull() bool {
	return n.path == devNull || (n.info != nil && n.info.Mode()&fs.ModeCharDevice != 0)
}

// isEmptyFile reports whether the node is an empty regular file, which masks
// like /dev/null does.
func (n node) isEmptyFile() bool {
	return n.info != nil && n.info.Mode().IsRegular() && n.info.Size() == 0
}

// hostPath maps a path within root to a path on this machine.
func hostPath(root, name string) string {
	return filepath.Join(root, filepath.FromSlash(name))
}

// resolveIn follows the symlinks of name as if root were "/": absolute link
// targets and ".." never leave root. Errors are the os errors of the failing
// step (fs.ErrNotExist, syscall.ENOTDIR, syscall.ELOOP, permissions).
func resolveIn(root, name string) (node, error) {
	todo := strings.Split(name, "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		host := hostPath(root, next)
		fi, err := os.Lstat(host)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path.Join(append([]string{next}, todo...)...) == devNull {
				// A fixture tree has no /dev; the link target alone masks.
				return node{path: devNull}, nil
			}
			return node{}, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			links++
			if links > maxSymlinks {
				return node{}, &fs.PathError{Op: "resolve", Path: host, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(host)
			if err != nil {
				return node{}, err
			}
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if hasComponents(todo) && !fi.IsDir() {
			return node{}, &fs.PathError{Op: "resolve", Path: host, Err: syscall.ENOTDIR}
		}
		cur = next
	}
	if cur == devNull {
		return node{path: devNull}, nil
	}
	fi, err := os.Lstat(hostPath(root, cur))
	if err != nil {
		return node{}, err
	}
	return node{path: cur, info: fi}, nil
}

// hasComponents reports whether a split path still names something beyond
// the current directory.
func hasComponents(parts []string) bool {
	for _, p := range parts {
		if p != "" && p != "." {
			return true
		}
	}
	return false
}

// unresolvable reports whether err means the path leads nowhere: missing,
// through a non-directory, or a symlink loop. Such entries are skipped.
func unresolvable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ELOOP)
}

// bare strips the *fs.PathError wrapper, whose path is the host path, so the
// caller can report the path as seen within the root.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
