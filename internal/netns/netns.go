package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// RunDir is the directory holding the bind mounts of named network
// namespaces, shared with iproute2 (NETNS_RUN_DIR).
const RunDir = "/run/netns"

// maxNameLen bounds namespace names. iproute2 allows up to NAME_MAX (255)
// bytes; we are stricter so that names stay usable as parts of interface
// aliases, log lines and generated paths.
const maxNameLen = 64

// ErrNotPermitted is returned (wrapped) when the caller lacks the privilege
// (CAP_SYS_ADMIN) to create, enter or remove network namespaces: EPERM or
// EACCES from unshare, setns, mount or from writing /run/netns.
var ErrNotPermitted = errors.New("operation not permitted")

// ErrNotSupported is returned (wrapped) by Create, Delete and Do on
// systems without network namespaces.
var ErrNotSupported = errors.New("network namespaces need Linux")

// ErrInvalidName is returned (wrapped) for a namespace name that iproute2
// would reject or that is longer than 64 bytes.
var ErrInvalidName = errors.New("invalid namespace name")

// Path returns the bind-mount path of the named namespace, /run/netns/NAME.
// It does not validate name.
func Path(name string) string {
	return filepath.Join(RunDir, name)
}

// validateName applies iproute2's rules (non-empty, no '/', not "." or
// "..") plus a length limit and a NUL check.
func validateName(name string) error {
	var why string
	switch {
	case name == "":
		why = "must not be empty"
	case name == "." || name == "..":
		why = `must not be "." or ".."`
	case strings.ContainsRune(name, '/'):
		why = "must not contain '/'"
	case strings.ContainsRune(name, 0):
		why = "must not contain NUL"
	case len(name) > maxNameLen:
		why = fmt.Sprintf("longer than %d bytes", maxNameLen)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidName, why)
}

// opError formats errors as "netns: OP NAME: ERR".
func opError(op, name string, err error) error {
	if errors.Is(err, ErrInvalidName) {
		return fmt.Errorf("netns: %s %q: %w", op, name, err)
	}
	return fmt.Errorf("netns: %s %s: %w", op, name, err)
}

// permError marks a privilege failure: it reads as the underlying errno
// but matches both ErrNotPermitted and that errno with errors.Is.
type permError struct{ errno error }

func (e *permError) Error() string   { return e.errno.Error() }
func (e *permError) Unwrap() []error { return []error{ErrNotPermitted, e.errno} }

// classify maps EPERM/EACCES anywhere in err's chain to a permError,
// optionally prefixed by the step that failed.
func classify(step string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		var errno syscall.Errno
		errors.As(err, &errno)
		return &permError{errno: errno}
	}
	if step == "" {
		return err
	}
	return fmt.Errorf("%s: %w", step, err)
}

// Exists reports whether /run/netns/NAME exists. Invalid names never
// exist.
func Exists(name string) bool {
	if validateName(name) != nil {
		return false
	}
	_, err := os.Lstat(Path(name))
	return err == nil
}

// List returns the names under /run/netns that start with prefix, sorted.
// A missing /run/netns yields an empty list.
func List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: list: %w", classify("", err))
	}
	names := []string{}
	for _, e := range entries { // os.ReadDir sorts by name
		if e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
}
