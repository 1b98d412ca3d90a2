package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"
)

// Mapping is a regular file mapped into memory ([MapFile]): [Open] reads
// its records in place, with no read calls and no copies. It is also an
// io.Reader over the same bytes (gzip input is read that way).
//
// The pages behind the read position are handed back to the kernel as
// the reading goes on (the file stays in the page cache), so resident
// memory stays a few megabytes whatever the file's size.
//
// A file truncated while mapped faults on the pages it lost (SIGBUS):
// the Reader's [Reader.Guard] turns that into a truncation error instead
// of a crash (checked with a 600 MB capture truncated mid-read). What is
// read before the fault may include the zeros the kernel shows past the
// new end in its last page (a few zero-length records, counted as
// skipped packets). The file's length is taken when it is mapped: data
// appended after that (a capture still being written) is not read.
type Mapping struct {
	data []byte
	off  int // Read's position
	// released: the bytes before it went back to the kernel.
	released int
	// Stop, if set, is called about every megabyte read; an error ends
	// the reading with it (e.g. a context's Err on Ctrl-C).
	Stop func() error
}

// errNotMappable is MapFile's answer for a file to read instead.
var errNotMappable = errors.New("capture: not a mappable file")

// releaseChunk is how far the reading goes before the pages behind it
// are released.
const releaseChunk = 8 << 20

// Read reads the mapped bytes in order, as a file would be read.
func (m *Mapping) Read(p []byte) (int, error) {
	if m.off >= len(m.data) {
		return 0, io.EOF
	}
	if err := m.advance(m.off); err != nil {
		return 0, err
	}
	n := copy(p, m.data[m.off:])
	m.off += n
	return n, nil
}

// advance is called as the reading reaches pos: it checks Stop and
// releases the pages behind pos.
func (m *Mapping) advance(pos int) error {
	if m.Stop != nil {
		if err := m.Stop(); err != nil {
			return err
		}
	}
	if pos-m.released >= releaseChunk {
		to := pos / pageSize * pageSize
		release(m.data[m.released:to])
		m.released = to
	}
	return nil
}

var pageSize = os.Getpagesize()

// Close unmaps the file; the packets read from it are gone with it.
func (m *Mapping) Close() error {
	if m == nil || m.data == nil {
		return nil
	}
	err := unmap(m.data)
	m.data = nil
	return err
}

// Guard runs f, which reads packets from r (and decodes them). When r
// reads a mapped file, a fault on the mapping (the file was truncated
// while being read) ends f with a truncation error instead of crashing
// the program. f must not start goroutines that touch the packets.
func (r *Reader) Guard(f func() error) (err error) {
	if r.mapped == nil {
		return f()
	}
	return r.mapped.guard(f, r)
}

// openStream opens a gzip-compressed mapped file, read through it as a
// stream (its header read under guard too).
func (m *Mapping) openStream(rd io.Reader) (r *Reader, err error) {
	err = m.guard(func() error {
		var err error
		r, err = openStream(rd)
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	r.mapped = m
	return r, nil
}

// guard runs f with faults turned into panics, and a panic from a fault
// inside the mapping into an error (see Mapping).
func (m *Mapping) guard(f func() error, r *Reader) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		e := recover()
		if e == nil {
			return
		}
		var fault interface{ Addr() uintptr }
		if re, ok := e.(runtime.Error); ok && errors.As(re, &fault) && m.holds(fault.Addr()) {
			err = errShrunk(r, len(m.data))
			return
		}
		panic(e)
	}()
	return f()
}

// holds reports whether addr falls inside the mapping.
func (m *Mapping) holds(addr uintptr) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= base && addr-base < uintptr(len(m.data))
}

// errShrunk is the error for a mapped file that lost its end while being
// read (r is nil before the Reader exists).
func errShrunk(r *Reader, size int) error {
	e := &CorruptError{Kind: ErrTruncated, Msg: fmt.Sprintf("the file was cut short while being read (it had %d bytes)", size)}
	if r != nil {
		e.Offset, e.Packets = r.offset(), r.packets
	}
	return e
}
