package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
)

// MaxDocument is the largest JSON document (a plan, a snapshot) longhaul
// reads: real ones are a few kilobytes to a few hundred. An endless or
// huge input is refused instead of read into memory.
const MaxDocument = 16 << 20

// openRegular opens a file the user named as input and checks it is a
// regular file: a directory, a FIFO or a device would block, never end,
// or mean something else. A missing or unreadable file is an error (exit
// 1); the wrong kind of file is a usage error (exit 2).
func openRegular(flag, path, want string) (*os.File, error) {
	// Stat first: opening a FIFO blocks until a writer comes.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, usagef("%s%s is %s, not a file: give %s", flagPrefix(flag), path, kindOf(st.Mode()), want)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s%w", flagPrefix(flag), err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s%w", flagPrefix(flag), err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, usagef("%s%s is %s, not a file: give %s", flagPrefix(flag), path, kindOf(st.Mode()), want)
	}
	return f, nil
}

// readDocument reads a whole JSON document the user named: a regular
// file of at most MaxDocument bytes.
func readDocument(flag, path, want string) ([]byte, error) {
	f, err := openRegular(flag, path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("%sread %s: %w", flagPrefix(flag), path, err)
	}
	if len(b) > MaxDocument {
		return nil, usagef("%s%s is larger than %s: not %s", flagPrefix(flag), path, units.FormatIEC(MaxDocument), want)
	}
	return b, nil
}

func flagPrefix(flag string) string {
	if flag == "" {
		return ""
	}
	return flag + " "
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// ctxReader stops reading once ctx is done, so a long read (a big
// capture, a big results file) ends promptly on Ctrl-C.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// errInterrupted reports whether err is the context's end after a signal.
func errInterrupted(err error) bool {
	return errors.Is(err, context.Canceled)
}

// checkDir refuses a directory flag that names nothing: a --state-dir or
// --root that does not exist would read as "nothing there" and mislead.
func checkDir(flag, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return usagef("%s %s: %v", flag, path, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return usagef("%s %s is not a directory", flag, path)
	}
	return nil
}

// hostSource is where audit and plan read a host from: this one, a
// network namespace of it, a copied tree (--root) or a saved snapshot.
type hostSource struct {
	netns, root, snapshot string
}

func (h *hostSource) register(f *pflag.FlagSet, verb string) {
	f.StringVar(&h.netns, "netns", "", verb+" the named network namespace (ip netns)")
	f.StringVar(&h.root, "root", "", "read proc/sys, proc and etc under this directory instead of / (routes are then not read)")
	f.StringVar(&h.snapshot, "snapshot", "", verb+" a snapshot saved with longhaul audit --json instead of this host")
}

// load gathers the host, or reads the saved snapshot.
func (h hostSource) load() (*snapshot.Snapshot, error) {
	if h.snapshot == "" {
		return snapshot.Gather(snapshot.Options{Root: h.root, Netns: h.netns})
	}
	if h.root != "" || h.netns != "" {
		return nil, usagef("--snapshot reads a saved snapshot: it does not go with --root or --netns")
	}
	return loadSnapshot(h.snapshot)
}
