//go:build linux

package server

import (
	"net"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/streamio"
)

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
		streamio.SetPacing(t.c, t.rate)
	}
	streamio.LimitUnsent(t.c)
	buf := make([]byte, t.wchunk)
	start := time.Now()
	var sent int64
	var dl streamio.Deadline
	for time.Now().Before(t.until) && t.take(len(buf)) {
		dl.Refresh(t.c.SetWriteDeadline, t.idle, time.Time{})
		n, err := t.c.Write(buf)
		sent += int64(n)
		t.ph.bytes.Add(int64(n))
		if err != nil {
			return
		}
		t.pace(start, sent, t.until)
	}
	streamio.CloseWrite(t.c)
	// Let the client read the rest and close: wait for its FIN, bounded.
	_ = t.c.SetReadDeadline(time.Now().Add(t.idle))
	_, _ = t.c.Read(buf[:1])
}

// receive reads until the duration is over, the bytes are spent or the
// client closes; a client that sends nothing for the idle timeout is
// dropped.
func (t *transfer) receive() {
	buf := make([]byte, streamio.Chunk)
	start := time.Now()
	var got int64
	end := t.until.Add(time.Second)
	var dl streamio.Deadline
	lw := streamio.NewLowat(t.c)
	for time.Now().Before(end) {
		dl.Refresh(t.c.SetReadDeadline, t.idle, end)
		n, err := t.c.Read(buf)
		got += int64(n)
		lw.Update(got)
		t.ph.bytes.Add(int64(n))
		if !t.take(n) || err != nil {
			return
		}
		t.pace(start, got, end)
	}
}
