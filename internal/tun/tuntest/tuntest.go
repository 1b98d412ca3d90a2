// Package tuntest provides an in-memory fake of a TUN device for tests of
// code written against tun.Dev: frames the test injects are returned by
// Read, frames the code writes are delivered to the test on a channel.
package tuntest

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// DefaultQueue is the capacity of the In and Out channels made by New.
const DefaultQueue = 256

// Device is a fake TUN device. It implements tun.Dev and is safe for
// concurrent use.
type Device struct {
	// In carries frames to be returned by Read, one per call. Tests send
	// on it (or use Inject).
	In chan []byte
	// Out receives a copy of every frame passed to Write. Tests receive
	// from it (or use Next). Write blocks while Out is full.
	Out chan []byte

	name   string
	closed chan struct{}
	once   sync.Once
}

// New returns a fake device named name with channels of DefaultQueue
// frames.
func New(name string) *Device {
	return NewSize(name, DefaultQueue)
}

// NewSize returns a fake device whose In and Out channels hold queue
// frames (0 makes them unbuffered).
func NewSize(name string, queue int) *Device {
	return &Device{
		In:     make(chan []byte, queue),
		Out:    make(chan []byte, queue),
		name:   name,
		closed: make(chan struct{}),
	}
}

// NewPair returns two fake devices wired back to back: what one writes,
// the other reads, as if bridged by a perfect wire (a.Out is b.In and b.Out
// is a.In). Inject still queues a frame for a device's own Read; do not
// receive from Out (or call Next) on a pair, that would steal the peer's
// frames.
func NewPair(nameA, nameB string) (a, b *Device) {
	a, b = New(nameA), New(nameB)
	a.Out, b.Out = b.In, a.In
	return a, b
}

// Name returns the name given to New.
func (d *Device) Name() string { return d.name }

// Read returns the next frame from In. A frame longer than buf is
// truncated and reported with io.ErrShortBuffer (a real TUN device would
// truncate silently). After Close it returns os.ErrClosed.
func (d *Device) Read(buf []byte) (int, error) {
	select {
	case <-d.closed:
		return 0, d.closedErr("read")
	default:
	}
	select {
	case f := <-d.In:
		n := copy(buf, f)
		if n < len(f) {
			return n, fmt.Errorf("tuntest: read %s: frame of %d bytes into a %d-byte buffer: %w", d.name, len(f), len(buf), io.ErrShortBuffer)
		}
		return n, nil
	case <-d.closed:
		return 0, d.closedErr("read")
	}
}

// Write sends a copy of frame on Out; it blocks while Out is full and
// returns os.ErrClosed after Close.
func (d *Device) Write(frame []byte) (int, error) {
	c := append([]byte(nil), frame...)
	select {
	case <-d.closed:
		return 0, d.closedErr("write")
	default:
	}
	select {
	case d.Out <- c:
		return len(frame), nil
	case <-d.closed:
		return 0, d.closedErr("write")
	}
}

// Close unblocks pending and future Reads and Writes. It is idempotent.
// The channels are not closed (other goroutines may still send on them).
func (d *Device) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

// Closed returns a channel closed by Close.
func (d *Device) Closed() <-chan struct{} { return d.closed }

func (d *Device) closedErr(op string) error {
	return &os.PathError{Op: op, Path: "tuntest:" + d.name, Err: os.ErrClosed}
}

// Inject queues a copy of frame for Read. It fails if the frame cannot be
// queued within timeout or the device is closed.
func (d *Device) Inject(frame []byte, timeout time.Duration) error {
	c := append([]byte(nil), frame...)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d.In <- c:
		return nil
	case <-d.closed:
		return d.closedErr("inject")
	case <-t.C:
		return fmt.Errorf("tuntest: inject into %s: not consumed within %v", d.name, timeout)
	}
}

// Next returns the next written frame, waiting up to timeout.
func (d *Device) Next(timeout time.Duration) ([]byte, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case f := <-d.Out:
		return f, nil
	case <-t.C:
		return nil, fmt.Errorf("tuntest: next from %s: nothing written within %v", d.name, timeout)
	}
}
