//go:build linux

package streamio

import (
	"net"
	"time"

	"github.com/longhaul/longhaul/internal/snapshot"
)

// Chunk is the size of one read of a data stream.
const Chunk = 256 << 10

// WriteChunk is the size of one write for a host: a sixteenth of its
// tcp_wmem maximum, 16..128 KiB. Small send buffers get small writes, as
// most applications' are: one large write can queue more than a small
// send buffer holds (seen on 6.18: a 256 KB write with a 128 KB tcp_wmem
// kept 340 KB in flight), which would hide the very limit the test looks
// for; big buffers get big writes, which cost less CPU per byte.
func WriteChunk(s *snapshot.Snapshot) int {
	n := int64(16 << 10)
	if s != nil {
		if t, ok := s.Triple("net.ipv4.tcp_wmem"); ok {
			n = t.Max / 16
		}
	}
	return int(min(max(n, 16<<10), 128<<10))
}

// Deadline refreshes a connection's read or write deadline at most every
// quarter of idle: setting it on every call costs a timer update per
// write, and a stalled peer is still dropped within idle.
type Deadline struct {
	next time.Time
}

// Refresh sets the deadline idle from now (no later than limit, unless
// zero) when a quarter of idle has passed since it last did.
func (d *Deadline) Refresh(set func(time.Time) error, idle time.Duration, limit time.Time) {
	now := time.Now()
	if now.Before(d.next) {
		return
	}
	dl := now.Add(idle)
	if !limit.IsZero() && dl.After(limit) {
		dl = limit
	}
	_ = set(dl)
	d.next = now.Add(idle / 4)
}

// unsentLowat is the most a data stream's sender keeps written but
// unsent (LimitUnsent): 1 MiB is 0.8 ms at 10 Gbit/s, time enough to
// write more, and drains in 0.6 s at 15 Mbit/s.
const unsentLowat = 1 << 20

// CloseWrite ends the sending half (a TCP FIN, or TLS's close_notify
// then the FIN): the peer reads EOF and the stream ends.
func CloseWrite(c net.Conn) {
	if x, ok := c.(interface{ CloseWrite() error }); ok {
		_ = x.CloseWrite()
	}
}
