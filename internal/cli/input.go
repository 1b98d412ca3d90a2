package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/filekind"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/termsafe"
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
		return nil, usagef("%s%s is %s, not a file: give %s", flagPrefix(flag), path, filekind.Of(st.Mode()), want)
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
		return nil, usagef("%s%s is %s, not a file: give %s", flagPrefix(flag), path, filekind.Of(st.Mode()), want)
	}
	return f, nil
}

// readDocument reads a whole JSON document the user named: a regular
// file or a pipe (see openInput) of at most MaxDocument bytes.
func readDocument(ctx context.Context, flag, path, want string) ([]byte, error) {
	f, err := openInput(ctx, flag, path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDocument+1))
	if errInterrupted(err) {
		return nil, fmt.Errorf("%s%s: interrupted while reading it", flagPrefix(flag), path)
	}
	if err != nil {
		return nil, fmt.Errorf("%sread %s: %w", flagPrefix(flag), path, err)
	}
	if len(b) > MaxDocument {
		return nil, usagef("%s%s is larger than %s: not %s", flagPrefix(flag), path, units.FormatIEC(MaxDocument), want)
	}
	return b, nil
}

// openInput opens an input the user named for streaming: a regular file,
// or a pipe: "-" (standard input), a FIFO or a shell's <(command). Every
// read of it, and the wait for a FIFO's writer, ends when ctx does (a
// blocked read of a pipe cannot be cancelled: it is left to the exit).
// A directory, a device or a socket is a usage error.
func openInput(ctx context.Context, flag, path, want string) (io.ReadCloser, error) {
	if path == "-" {
		st, err := os.Stdin.Stat()
		if err != nil {
			return nil, fmt.Errorf("%sstandard input: %w", flagPrefix(flag), err)
		}
		if st.Mode()&fs.ModeCharDevice != 0 {
			return nil, usagef("%s-: standard input is a terminal or a device: pipe %s into it, or give a file", flagPrefix(flag), want)
		}
		return newPipeReader(ctx, os.Stdin), nil
	}
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		f, err := openFIFO(ctx, path)
		if errInterrupted(err) {
			return nil, fmt.Errorf("%s%s: interrupted while waiting for a writer on the FIFO", flagPrefix(flag), path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s%w", flagPrefix(flag), err)
		}
		return newPipeReader(ctx, f), nil
	}
	f, err := openRegular(flag, path, want)
	if err != nil {
		return nil, err
	}
	return readCloser{ctxReader{ctx, f}, f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// fifoWaitNotice is how long openFIFO waits for a writer in silence.
const fifoWaitNotice = 2 * time.Second

// openFIFO opens a FIFO for reading, which blocks until a writer opens
// it: the wait ends with ctx, and after fifoWaitNotice it says what it
// waits for.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	notice := time.NewTimer(fifoWaitNotice)
	defer notice.Stop()
	for {
		select {
		case o := <-ch:
			return o.f, o.err
		case <-notice.C:
			fmt.Fprintf(os.Stderr, "longhaul: waiting for a writer on the FIFO %s (Ctrl-C to stop)\n", termsafe.String(path))
		case <-ctx.Done():
			// Open it for writing without blocking, so the reader's
			// open returns and its goroutine ends.
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			go func() {
				if o := <-ch; o.f != nil {
					o.f.Close()
				}
			}()
			return nil, fmt.Errorf("waiting for a writer: %w", ctx.Err())
		}
	}
}

// pipeReader reads a pipe in a helper goroutine, so that a read blocked
// on a silent writer still ends when ctx does.
type pipeReader struct {
	ctx     context.Context
	f       *os.File
	buf     []byte
	res     chan pipeRead
	pending bool
}

type pipeRead struct {
	n   int
	err error
}

func newPipeReader(ctx context.Context, f *os.File) *pipeReader {
	return &pipeReader{ctx: ctx, f: f, buf: make([]byte, 256<<10), res: make(chan pipeRead, 1)}
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	if !p.pending {
		p.pending = true
		buf := p.buf[:min(len(b), len(p.buf))]
		go func() {
			n, err := p.f.Read(buf)
			p.res <- pipeRead{n, err}
		}()
	}
	select {
	case <-p.ctx.Done():
		return 0, p.ctx.Err()
	case r := <-p.res:
		p.pending = false
		return copy(b, p.buf[:r.n]), r.err
	}
}

// Close closes the pipe unless a read of it is still blocked (after an
// interrupt): the process is about to exit then.
func (p *pipeReader) Close() error {
	if p.pending || p.f == os.Stdin {
		return nil
	}
	return p.f.Close()
}

func flagPrefix(flag string) string {
	if flag == "" {
		return ""
	}
	return flag + " "
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
	f.StringVar(&h.snapshot, "snapshot", "", verb+" a snapshot saved with longhaul audit --json instead of this host (- reads standard input)")
}

// load gathers the host, or reads the saved snapshot.
func (h hostSource) load(ctx context.Context) (*snapshot.Snapshot, error) {
	if h.snapshot == "" {
		return snapshot.Gather(snapshot.Options{Root: h.root, Netns: h.netns})
	}
	if h.root != "" || h.netns != "" {
		return nil, usagef("--snapshot reads a saved snapshot: it does not go with --root or --netns")
	}
	return loadSnapshot(ctx, h.snapshot)
}
