package flows

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Split is a sending socket's interval divided by what held it: the
// kernel's chrono stats, corrected by the evidence of tcp_info where the
// congestion control makes them wrong. Busy is the kernel's busy time
// (clamped to dt); Rwnd + Sndbuf + Cwnd + App = dt.
type Split struct {
	Busy, Rwnd, Sndbuf, Cwnd, App time.Duration
	// Evidence names the rule that moved the kernel's congestion-window
	// time ("" none): EvidenceWindow, EvidenceSndbuf or EvidenceApp.
	Evidence string
}

// Evidence values of Split.
const (
	EvidenceWindow = "flight at the peer's window"
	EvidenceSndbuf = "send buffer mostly in flight"
	EvidenceApp    = "little to send, both windows open"
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
//   - the send buffer: most of it was in flight (at least half of
//     sk_sndbuf, which autotuning would have grown to twice the cwnd had
//     the congestion window been the limit) and no more waited unsent.
//
// And, queue or not, a sender with data in flight but little of it (what
// it had in flight and unsent fitting both windows with room, its
// buffer less than half full, not in recovery) at both views was held by
// its application: the kernel counts such a trickle (a control
// connection, a paced writer) as busy, and its time as the congestion
// window's (diagnose's per-sample rule for tcp_info says the same).
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
	if s.Cwnd <= 0 {
		return s
	}
	if !calm(prev, cur) {
		if appBound(prev, cur) {
			s.App += s.Cwnd
			s.Cwnd, s.Evidence = 0, EvidenceApp
		}
		return s
	}
	switch {
	case windowBound(prev, cur, dt):
		s.Rwnd += s.Cwnd
		s.Cwnd, s.Evidence = 0, EvidenceWindow
	case sndbufBound(prev, cur):
		s.Sndbuf += s.Cwnd
		s.Cwnd, s.Evidence = 0, EvidenceSndbuf
	case appBound(prev, cur):
		s.App += s.Cwnd
		s.Cwnd, s.Evidence = 0, EvidenceApp
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

// sndbufBound: the flight took at least half of sk_sndbuf (payload
// against memory) at either view, with no more waiting unsent than in
// flight at both. Autotuning keeps a congestion-window-bound sender's
// buffer at about twice its cwnd in memory (tcp_sndbuf_expand), so its
// flight stays under a third of the buffer and the unsent data queues
// behind it; a buffer that cannot grow (tcp_wmem[2], SO_SNDBUF) is
// mostly in flight. Measured at 50 ms: bbr held by 128 KiB kept 90-145
// kB in flight with up to 54 kB unsent (pacing holds some back), cubic
// 75-104 kB with none; bbr with big buffers 0.6 MB in flight of 8.8 MB
// with 5.9 MB unsent, cubic 0.5 MB of 3 MB.
func sndbufBound(prev, cur Sock) bool {
	if cur.Sndbuf <= 0 || cur.NotSent > cur.Inflight || (prev.BytesAcked > 0 && prev.NotSent > prev.Inflight) {
		return false
	}
	mostly := func(s Sock) bool { return s.Sndbuf > 0 && 2*s.Inflight >= s.Sndbuf }
	return mostly(cur) || (prev.BytesAcked > 0 && mostly(prev))
}

// appBound: at both views (the earlier one if known) what the sender had
// in flight and unsent fitted its congestion window and the peer's
// window with two segments to spare, its buffer (known: without it a
// full small buffer looks the same) was less than half full, it had
// less than two segments written and unsent (a writer that keeps more
// queued, as one capped by TCP_NOTSENT_LOWAT does, is not short of data)
// and it was not recovering a loss.
func appBound(prev, cur Sock) bool {
	little := func(s Sock) bool {
		mss := max(s.MSS, 1)
		have := s.Inflight + s.NotSent
		return s.CAState < 3 && s.Cwnd > 0 && have < s.Cwnd-2*mss && (s.SndWnd <= 0 || have < s.SndWnd-2*mss) &&
			s.Sndbuf > 0 && 2*s.WmemQueued < s.Sndbuf && s.NotSent < 2*mss
	}
	return little(cur) && (prev.BytesAcked <= 0 || little(prev))
}
