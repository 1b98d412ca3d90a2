package flows

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Split is a sending socket's interval divided by what held it: the
// kernel's chrono stats, corrected by the evidence of tcp_info where the
// congestion control makes them wrong. Rwnd + Sndbuf + Cwnd = Busy <= dt;
// App = dt - Busy.
type Split struct {
	Busy, Rwnd, Sndbuf, Cwnd, App time.Duration
	// Evidence names the rule that moved the kernel's congestion-window
	// time to a window or the send buffer ("" none): EvidenceWindow or
	// EvidenceSndbuf.
	Evidence string
}

// Evidence values of Split.
const (
	EvidenceWindow = "flight at the peer's window"
	EvidenceSndbuf = "send buffer full, nothing unsent"
)

// windowShare is the part of the window ceiling (peer window / min RTT)
// a flow must deliver to be called window-bound by its rate alone: a
// sender that acknowledges that much of a window per round trip keeps
// its flight at the window. Measured on the emulated path at 50 ms x 100
// Mbit/s with a 171 kB window: bbr 84-93%, cubic 93-98% of it.
const windowShare = 0.75

// SplitInterval divides the interval dt between two views of a sending
// socket. The kernel's tcpi_rwnd_limited and tcpi_sndbuf_limited count
// only the moments tcp_write_xmit stopped at the peer's window or found
// the send buffer empty while the congestion window had room; a pacing
// or model-based congestion control (bbr: pacing stops the sender before
// the window test, and its cwnd, in slow start by the kernel's test, reads
// as "cwnd-limited") and a flow held by its send buffer below the BDP
// (its cwnd stops growing just above its flight) get most of their time
// counted as the congestion window's. When no queue stood (the smoothed
// RTT near its minimum) and nothing was lost, that time is moved to the
// limit the evidence shows:
//
//   - the peer's window: the flight sat at it (within two segments) at
//     either view, or the flow delivered at least windowShare of a window
//     per minimum RTT;
//   - the send buffer: it was full (the data queued at least half of
//     sk_sndbuf) and nothing waited unsent, so every byte the application
//     could queue was already in flight, below both windows.
//
// Every rule holds for cubic, reno and bbr: each reads what the flight
// and the RTT did, not what the congestion control did with its cwnd.
func SplitInterval(prev, cur Sock, dt time.Duration) Split {
	// The chrono stats tick in jiffies: clamp what they say to dt.
	busy := min(max(cur.Busy-prev.Busy, 0), max(dt, 0))
	var s Split
	s.Busy = busy
	s.Rwnd = min(max(cur.RwndLimited-prev.RwndLimited, 0), busy)
	s.Sndbuf = min(max(cur.SndbufLimited-prev.SndbufLimited, 0), busy-s.Rwnd)
	s.Cwnd = busy - s.Rwnd - s.Sndbuf
	s.App = max(dt, 0) - busy
	if s.Cwnd <= 0 || !calm(prev, cur) {
		return s
	}
	switch {
	case windowBound(prev, cur, dt):
		s.Rwnd += s.Cwnd
		s.Cwnd, s.Evidence = 0, EvidenceWindow
	case sndbufBound(prev, cur):
		s.Sndbuf += s.Cwnd
		s.Cwnd, s.Evidence = 0, EvidenceSndbuf
	}
	return s
}

// calm: the interval moved data, no queue stood (the smoothed RTT within
// a quarter and 2 ms of the minimum) and at most a trace was lost (below
// the loss-limited rate of package diagnose).
func calm(prev, cur Sock) bool {
	sent := cur.BytesAcked - prev.BytesAcked
	if sent <= 0 || cur.MinRTT <= 0 || cur.RTT <= 0 {
		return false
	}
	if cur.RTT > cur.MinRTT+cur.MinRTT/4+2*time.Millisecond {
		return false
	}
	lost := max(cur.BytesRetrans-prev.BytesRetrans, 0)
	if lost == 0 && cur.Retrans > prev.Retrans {
		lost = (cur.Retrans - prev.Retrans) * max(cur.MSS, 1)
	}
	return float64(lost) < diagnose.LossRate*float64(sent)
}

// windowBound: the flight sat at the peer's window at either view, or the
// flow delivered most of a window per minimum RTT.
func windowBound(prev, cur Sock, dt time.Duration) bool {
	at := func(s Sock) bool {
		return s.SndWnd > 0 && s.Inflight > 0 && s.Inflight >= s.SndWnd-2*max(s.MSS, 1)
	}
	if at(cur) || (prev.BytesAcked > 0 && at(prev)) {
		return true
	}
	wnd := max(prev.SndWnd, cur.SndWnd)
	if wnd <= 0 || dt <= 0 {
		return false
	}
	sent := float64(cur.BytesAcked - prev.BytesAcked)
	return sent*cur.MinRTT.Seconds() >= windowShare*float64(wnd)*dt.Seconds()
}

// sndbufBound: the send buffer was full (queued at least half of
// sk_sndbuf: a writer blocked on a full buffer is woken when a third of
// it is free) with nothing unsent at both views, and the flight below
// the peer's window.
func sndbufBound(prev, cur Sock) bool {
	mss := max(cur.MSS, 1)
	unsent := func(s Sock) bool { return s.NotSent > 2*mss }
	if cur.Sndbuf <= 0 || unsent(cur) || (prev.BytesAcked > 0 && unsent(prev)) {
		return false
	}
	full := func(s Sock) bool { return s.Sndbuf > 0 && 2*s.WmemQueued >= s.Sndbuf }
	return full(cur) || (prev.BytesAcked > 0 && full(prev))
}
