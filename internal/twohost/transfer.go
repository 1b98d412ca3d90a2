//go:build linux

package twohost

import (
	"net"
	"time"

	"github.com/longhaul/longhaul/internal/snapshot"
)

// chunk is the size of one read of a data stream.
const chunk = 256 << 10

// writeChunk is the size of one write for a host: a sixteenth of its
// tcp_wmem maximum, 16..128 KiB. Small send buffers get small writes, as
// most applications' are: one large write can queue more than a small
// send buffer holds (seen on 6.18: a 256 KB write with a 128 KB tcp_wmem
// kept 340 KB in flight), which would hide the very limit the test looks
// for; big buffers get big writes, which cost less CPU per byte.
func writeChunk(s *snapshot.Snapshot) int {
	n := int64(16 << 10)
	if s != nil {
		if t, ok := s.Triple("net.ipv4.tcp_wmem"); ok {
			n = t.Max / 16
		}
	}
	return int(min(max(n, 16<<10), 128<<10))
}

// deadline refreshes a connection's read or write deadline at most every
// quarter of idle: setting it on every call costs a timer update per
// write, and a stalled peer is still dropped within idle.
type deadline struct {
	next time.Time
}

func (d *deadline) refresh(set func(time.Time) error, idle time.Duration, limit time.Time) {
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

// transfer is one data stream on the server, bounded by the phase's
// duration, the session's bytes and the stream's share of the rate.
type transfer struct {
	c      net.Conn
	ph     *phase
	until  time.Time
	idle   time.Duration
	rate   float64 // bits/s; 0 unpaced
	wchunk int
}

// take reserves n bytes of the session's budget; false when it is spent.
func (t *transfer) take(n int) bool {
	if t.ph.sess.budget.Add(-int64(n)) < 0 {
		t.ph.capped.Store(true)
		return false
	}
	return true
}

// minPaceBps is the lowest rate the server paces at: what a client asks
// below it is raised to it (and still bounded by the server's cap).
const minPaceBps = 8000

// unsentLowat is the most a data stream's sender keeps written but
// unsent (limitUnsent): 1 MiB is 0.8 ms at 10 Gbit/s, time enough to
// write more, and drains in 0.6 s at 15 Mbit/s.
const unsentLowat = 1 << 20

// pace sleeps while the stream is ahead of its rate, at most until end.
// Every byte of every phase is paced, both directions: an upload's last
// second (its grace to read what was in flight) too.
func (t *transfer) pace(start time.Time, moved int64, end time.Time) {
	if t.rate <= 0 {
		return
	}
	// In float seconds: a huge byte count over a tiny rate overflowed a
	// Duration into the past, which skipped the sleep.
	ahead := float64(moved)*8/t.rate - time.Since(start).Seconds()
	if ahead <= 0 {
		return
	}
	if left := time.Until(end); ahead > left.Seconds() {
		time.Sleep(max(left, 0))
		return
	}
	time.Sleep(time.Duration(ahead * float64(time.Second)))
}

// sendData writes until the duration is over or the bytes are spent.
func (t *transfer) sendData() {
	if t.rate > 0 {
		setPacing(t.c, t.rate)
	}
	limitUnsent(t.c)
	buf := make([]byte, t.wchunk)
	start := time.Now()
	var sent int64
	var dl deadline
	for time.Now().Before(t.until) && t.take(len(buf)) {
		dl.refresh(t.c.SetWriteDeadline, t.idle, time.Time{})
		n, err := t.c.Write(buf)
		sent += int64(n)
		t.ph.bytes.Add(int64(n))
		if err != nil {
			return
		}
		t.pace(start, sent, t.until)
	}
	closeWrite(t.c)
	// Let the client read the rest and close: wait for its FIN, bounded.
	_ = t.c.SetReadDeadline(time.Now().Add(t.idle))
	_, _ = t.c.Read(buf[:1])
}

// receive reads until the duration is over, the bytes are spent or the
// client closes; a client that sends nothing for the idle timeout is
// dropped.
func (t *transfer) receive() {
	buf := make([]byte, chunk)
	start := time.Now()
	var got int64
	end := t.until.Add(time.Second)
	var dl deadline
	lw := newLowat(t.c)
	for time.Now().Before(end) {
		dl.refresh(t.c.SetReadDeadline, t.idle, end)
		n, err := t.c.Read(buf)
		got += int64(n)
		lw.update(got)
		t.ph.bytes.Add(int64(n))
		if !t.take(n) || err != nil {
			return
		}
		t.pace(start, got, end)
	}
}

// closeWrite ends the sending half (a TCP FIN, or TLS's close_notify
// then the FIN): the peer reads EOF and the stream ends.
func closeWrite(c net.Conn) {
	if x, ok := c.(interface{ CloseWrite() error }); ok {
		_ = x.CloseWrite()
	}
}
