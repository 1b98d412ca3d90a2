//go:build linux

package streamio

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Lowat keeps a receiving socket's SO_RCVLOWAT at min(256 KiB, its
// receive buffer / 8, what arrived in the last interval): the kernel then
// wakes the reader once that much is queued (or the stream ends) instead
// of for every few segments, so a fast flow is read in fewer, larger
// reads (the Go runtime's wake-ups per read were most of test's CPU).
// A value that small against the buffer leaves the buffer and the
// advertised window as they are (tcp_set_rcvlowat grows the buffer, and
// clamps the window, only for a value whose space exceeds the buffer),
// and following the recent rate keeps a slow flow's reads coming.
type Lowat struct {
	rc        syscall.RawConn
	last      time.Time
	lastBytes int64
}

const (
	lowatEvery = 100 * time.Millisecond
	lowatMax   = 256 << 10
)

// NewLowat follows c's reads. Plain TCP only: TLS ends a stream with a
// close_notify record and no FIN, which a low-water mark would hold back
// until the peer closes.
func NewLowat(c net.Conn) *Lowat {
	sc, ok := c.(*net.TCPConn)
	if !ok {
		return &Lowat{}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return &Lowat{}
	}
	return &Lowat{rc: rc, last: time.Now()}
}

// Update is called after each read with the bytes read so far.
func (l *Lowat) Update(total int64) {
	if l.rc == nil {
		return
	}
	now := time.Now()
	if now.Sub(l.last) < lowatEvery {
		return
	}
	recent := total - l.lastBytes
	l.last, l.lastBytes = now, total
	_ = l.rc.Control(func(fd uintptr) {
		buf, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err != nil {
			return
		}
		v := max(1, min(lowatMax, int64(buf)/8, recent))
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, int(v))
	})
}
