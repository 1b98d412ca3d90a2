// Package flows judges live TCP sockets from the kernel's tcp_info: what
// limited each flow that moved data between two dumps (sock_diag,
// INET_DIAG_INFO), as a verdict with numbers and a fix.
//
// The kernel already measures the two host-side limits a capture can only
// infer: tcpi_busy_time is the time the socket had data to send, and of
// it tcpi_rwnd_limited the time the peer's receive window stopped it and
// tcpi_sndbuf_limited the time its own send buffer did (the "chrono"
// stats, in jiffies, reported in µs). Between two dumps dt apart:
//
//	rwnd-limited   = Δrwnd_limited
//	sndbuf-limited = Δsndbuf_limited
//	app-limited    = dt - Δbusy_time (nothing to send)
//	congestion     = Δbusy_time - Δrwnd_limited - Δsndbuf_limited
//
// and the congestion window's share is slow start while cwnd is below
// ssthresh, loss recovery while the socket is in Recovery or Loss, and
// the path otherwise; losses while the smoothed RTT stands well above
// tcpi_min_rtt are a queue overflowing at the bottleneck (so the verdict
// is bottleneck, not loss-limited). That timeline goes to package
// diagnose, which
// judges captures too, so a live flow and a captured one get the same
// verdicts, numbers and fixes.
//
// Judge is pure; Dump reads the sockets of a network namespace.
package flows

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Sock is one TCP socket's tcp_info, in plain units.
type Sock struct {
	Local, Remote netip.AddrPort
	// Cookie is the kernel's socket cookie (inet_diag_sockid.idiag_cookie):
	// unique among the namespace's sockets for the socket's life, so it
	// tells a new socket on a reused address pair from an old one.
	Cookie uint64
	State  string
	MSS    int64 // snd_mss, bytes
	// Cwnd and Ssthresh in bytes; Ssthresh 0 while it is still
	// "infinite" (the first slow start).
	Cwnd, Ssthresh int64
	// SndWnd is the peer's advertised window (bytes, scaled); RcvSpace
	// the receive buffer space autotuning aims at.
	SndWnd, RcvSpace int64
	Inflight         int64 // bytes sent, not acknowledged, not SACKed
	SackedBytes      int64 // bytes SACKed, not yet cumulatively acknowledged
	NotSent          int64 // bytes written by the application, not yet sent
	RTT, MinRTT      time.Duration
	// Cumulative counters.
	BytesAcked, BytesReceived, BytesSent, BytesRetrans int64
	Retrans                                            int64 // segments
	DataSegsOut                                        int64
	Busy, RwndLimited, SndbufLimited                   time.Duration
	// CAState is the congestion-avoidance state: 0 open, 1 disorder, 2
	// CWR, 3 recovery, 4 loss.
	CAState uint8
	// RTOs is how many times in a row the timer resent the head of the
	// data, unanswered (tcpi_retransmits; 0 once an ACK moves it).
	RTOs int64
	// WindowScale: both SYNs carried the window scale option.
	WindowScale bool
	DeliveryBps float64 // the kernel's delivery rate estimate, bits/s
	// Sndbuf is the socket's send buffer (sk_sndbuf, bytes of memory,
	// autotuned up to tcp_wmem[2]) and WmemQueued the memory its queued
	// data takes (sk_wmem_queued), from sock_diag's INET_DIAG_SKMEMINFO
	// or getsockopt(SO_MEMINFO); 0 when not read.
	Sndbuf, WmemQueued int64
	// CC is the socket's congestion control ("cubic", "bbr"); "" unknown.
	CC string
	// Reordering as the kernel saw it (0 on kernels before 4.19 and
	// from dumps that lack it): ReordSeen counts the sender's reordering
	// events (tcpi_reord_seen), Reordering is its reordering degree in
	// segments (tcpi_reordering: net.ipv4.tcp_reordering, 3, until it
	// sees more), DSACKDups the duplicates the receiver reported with
	// D-SACK (spurious retransmissions, tcpi_dsack_dups) and RcvOOO the
	// segments this end received out of order (tcpi_rcv_ooopack).
	ReordSeen, Reordering, DSACKDups, RcvOOO int64
}

// Key identifies a socket across dumps.
func (s Sock) Key() string { return s.Local.String() + "-" + s.Remote.String() }

// Direction values of Flow.Direction.
const (
	DirSend    = "send"    // this host sends: the verdict is about this socket
	DirReceive = "receive" // this host receives: the sender holds the verdict
	DirIdle    = "idle"    // nothing moved in the interval
)

// Flow is the judgement of one socket over an interval.
type Flow struct {
	Local     string  `json:"local"`
	Remote    string  `json:"remote"`
	State     string  `json:"state"`
	Direction string  `json:"direction"`
	Interval  float64 `json:"interval_s"`
	// Bytes moved in the interval: acknowledged (sent) and received.
	BytesSent     int64   `json:"bytes_sent"`
	BytesReceived int64   `json:"bytes_received"`
	ThroughputBps float64 `json:"throughput_bps"`
	RTT           float64 `json:"rtt_s"`
	MinRTT        float64 `json:"min_rtt_s"`
	CwndBytes     int64   `json:"cwnd_bytes"`
	SndWndBytes   int64   `json:"peer_window_bytes"`
	RcvSpaceBytes int64   `json:"rcv_space_bytes"`
	InflightBytes int64   `json:"inflight_bytes"`
	Retrans       int64   `json:"retrans_segments"`
	// SndbufBytes is the socket's send buffer (sk_sndbuf) and CC its
	// congestion control, when the dump had them (0, "" otherwise).
	SndbufBytes int64  `json:"sndbuf_bytes,omitempty"`
	CC          string `json:"cc,omitempty"`
	// Cause is what the path did to a sending flow held by its losses,
	// when tcp_info shows it (reordering: the interval's retransmissions
	// were mostly spurious); its fix is the flow's. Seen is what else the
	// path was seen doing since the socket opened that did not limit it
	// (a reordering the sender tolerated).
	Cause *diagnose.Cause  `json:"cause,omitempty"`
	Seen  []diagnose.Cause `json:"seen,omitempty"`
	// The verdict (package diagnose's vocabulary), its share of the
	// interval, the shares of every state, a summary and the fix. For a
	// receiving or idle socket Verdict is "unknown" and Summary says why.
	diagnose.Verdict
}

// Options tune Judge.
type Options struct {
	// Ramp is how the rate moved over the interval, when the caller
	// measured it (test: the two halves of a phase's judged part): a
	// flow still ramping is judged slow start (diagnose.Ramp).
	Ramp *diagnose.Ramp
	// RateBps is the path's bottleneck rate if the user knows it: it
	// sizes the fixes (the buffers for the whole path, not only for the
	// rate reached).
	RateBps float64
	// Tracks holds, by socket (Sock.Key), the samples read between the
	// two dumps, when the caller took some: how a sending socket lost
	// segments over the interval, which names random loss, a shallow
	// buffer or bufferbloat (lossCause).
	Tracks map[string]*LossTrack
	// CauseByCaller: the caller decides the path's cause itself, with
	// more evidence than one socket's (test's judge: the control pings,
	// the probes, both ends' CPU), so the flow comes without one and a
	// document never carries two causes for one direction.
	CauseByCaller bool
	// HighRTT is the RTT under load over the interval when the caller
	// knows it better than the last sample's smoothed RTT (test: the
	// median of the sender's samples over the phase's second half): it
	// flags bufferbloat against the socket's minimum. A loss-based
	// control that fills the bottleneck's own one-BDP queue doubles its
	// smoothed RTT at the top of each cycle, and one sample there read
	// as a deeper queue (a clean 50 ms test run was flagged).
	HighRTT time.Duration
}

// Judge compares two dumps of the same socket taken dt apart. A zero
// prev is a socket new since the first dump: its counters count from
// the handshake, whose SYN the kernel counts as one byte acknowledged
// (tcpi_bytes_acked is 1 on a connection that sent nothing), which is
// no data: a new idle socket is idle, not a sender at 8 bit/s.
func Judge(prev, cur Sock, dt time.Duration, opt Options) Flow {
	if !prev.Local.IsValid() {
		prev.BytesAcked = min(cur.BytesAcked, 1)
	}
	f := Flow{
		Local: cur.Local.String(), Remote: cur.Remote.String(), State: cur.State,
		Interval:      dt.Seconds(),
		BytesSent:     max(cur.BytesAcked-prev.BytesAcked, 0),
		BytesReceived: max(cur.BytesReceived-prev.BytesReceived, 0),
		RTT:           cur.RTT.Seconds(), MinRTT: cur.MinRTT.Seconds(),
		CwndBytes: cur.Cwnd, SndWndBytes: cur.SndWnd, RcvSpaceBytes: cur.RcvSpace,
		InflightBytes: max(prev.Inflight, cur.Inflight),
		Retrans:       max(cur.Retrans-prev.Retrans, 0),
		SndbufBytes:   cur.Sndbuf, CC: cur.CC,
	}
	if dt <= 0 {
		dt = time.Nanosecond
	}
	var none diagnose.Timeline
	scope := "the last " + fmtDur(dt)
	switch {
	case f.BytesSent == 0 && f.BytesReceived == 0 && stuckOnBlackHole(cur):
		return stuck(f, cur, scope)
	case f.BytesSent == 0 && f.BytesReceived == 0:
		f.Direction = DirIdle
		f.Verdict = diagnose.Diagnose(&none, diagnose.Info{Scope: scope, Duration: dt})
		return f
	case f.BytesSent < f.BytesReceived:
		f.Direction = DirReceive
		f.ThroughputBps = float64(f.BytesReceived) * 8 / dt.Seconds()
		f.Verdict = diagnose.Diagnose(&none, diagnose.Info{Vantage: diagnose.VantageReceiver, Sender: f.Remote, Bytes: f.BytesReceived,
			Duration: dt, RTT: cur.RTT, Scope: scope, Socket: &diagnose.Socket{RcvSpace: cur.RcvSpace}})
		return f
	}
	f.Direction = DirSend
	f.ThroughputBps = float64(f.BytesSent) * 8 / dt.Seconds()
	tl := senderTimeline(prev, cur, dt, f.InflightBytes)
	in := senderInfo(prev, cur, dt, f, opt)
	f.Verdict = diagnose.Diagnose(&tl, in)
	if !opt.CauseByCaller {
		pathCauses(&f, prev, cur, opt)
	}
	return f
}

// pathCauses gathers what the socket saw of the path (its reordering
// over the interval and its life, how it lost over the interval's
// samples) for diagnose.PathCause, which names the cause of a flow held
// by its losses and what else was seen.
func pathCauses(f *Flow, prev, cur Sock, opt Options) {
	sender := "this host"
	interval := diagnose.ReorderEvidence{Events: max(cur.ReordSeen-prev.ReordSeen, 0), Degree: cur.Reordering,
		Spurious: max(cur.DSACKDups-prev.DSACKDups, 0), Retrans: max(cur.Retrans-prev.Retrans, 0),
		Segments: max(cur.DataSegsOut-prev.DataSegsOut, 0), MinRTT: cur.MinRTT, Bps: f.ThroughputBps, Sender: sender}
	life := diagnose.ReorderEvidence{Events: cur.ReordSeen, Degree: cur.Reordering, Spurious: cur.DSACKDups, Retrans: cur.Retrans,
		Segments: cur.DataSegsOut, Sender: sender}
	e := diagnose.PathEvidence{Bps: f.ThroughputBps, PathBps: pathmodel.Goodput(opt.RateBps), Reorder: &interval, ReorderLife: &life,
		Scope: "the last " + fmtDur(units.FromSeconds(f.Interval))}
	e.Loss, e.LossQuiet = lossEvidence(f, cur, opt)
	j := diagnose.PathCause(f.Verdict, e)
	f.Verdict, f.Cause, f.Seen = j.Verdict, j.Cause, append(f.Seen, j.Seen...)
}

// minTrack is the least samples of an interval that tell how a socket
// lost (a few per round trip of the interval at least).
const minTrack = 8

// lossEvidence is how a sending socket lost, from the samples taken over
// the interval (its Options.Tracks entry), nil when too few were taken;
// quiet when none was lost in the interval: the evidence is then how it
// lost before, which tells only bursts.
func lossEvidence(f *Flow, cur Sock, opt Options) (*diagnose.LossEvidence, bool) {
	tr := opt.Tracks[cur.Key()]
	if tr == nil || tr.Samples() < minTrack || cur.MinRTT <= 0 {
		return nil, false
	}
	e := diagnose.LossEvidence{MinRTT: cur.MinRTT, LoadedRTT: tr.MedianRTT(), Bps: f.ThroughputBps, PeakBps: tr.PeakBps,
		MSS: int(cur.MSS), CC: cur.CC, Sender: "this host",
		FilledPath: f.Verdict.Verdict == diagnose.Bottleneck}
	tr.Fill(&e)
	quiet := tr.FillBefore(&e)
	return &e, quiet
}

// senderTimeline turns an interval's split (SplitInterval: the kernel's
// chrono stats, corrected by the evidence of the flight and the RTT) into
// time per state: rwnd- and sndbuf-limited, the rest of the busy time to
// the congestion window (slow start, loss recovery or the path), and
// time not busy to the application.
func senderTimeline(prev, cur Sock, dt time.Duration, inflight int64) diagnose.Timeline {
	sp := SplitInterval(prev, cur, dt)
	var tl diagnose.Timeline
	tl.StateTime[diagnose.StateRwnd] = sp.Rwnd
	tl.StateTime[diagnose.StateSndbuf] = sp.Sndbuf
	tl.StateTime[diagnose.StateApp] = sp.App
	switch {
	case bbrPastStartup(cur):
		tl.StateTime[diagnose.StateNetwork] = sp.Cwnd
	case cur.CAState >= 3 || prev.CAState >= 3 || (cur.Ssthresh > 0 && cur.Cwnd < cur.Ssthresh && cur.Retrans > prev.Retrans):
		// In recovery (PRR takes cwnd under the new ssthresh) or growing
		// back to ssthresh after losing in the interval: loss, not a
		// slow start.
		tl.StateTime[diagnose.StateLoss] = sp.Cwnd
	case cur.Ssthresh == 0 || cur.Cwnd < cur.Ssthresh:
		tl.StateTime[diagnose.StateSlowStart] = sp.Cwnd
	default:
		tl.StateTime[diagnose.StateNetwork] = sp.Cwnd
	}
	tl.MaxRwnd = cur.SndWnd
	tl.MaxInflight = inflight
	// Idle time is the kernel's not-busy time (gaps uncounted: tcp_info has
	// only the total); busy time with little to send is waits with room.
	tl.IdleTime = max(dt, 0) - sp.Busy
	if sp.Evidence == EvidenceApp {
		tl.SendGaps, tl.SendGapTime = 1, sp.App-tl.IdleTime
	}
	return tl
}

// bbrStartupRounds: BBR leaves its startup within this many round trips
// of sending (its rate grows 2.89x a round until it stops growing by a
// quarter in three: 1 Gbit/s x 200 ms from a 10-segment window takes
// about 7 rounds and a drain).
const bbrStartupRounds = 10

// bbrPastStartup: a BBR sender that has been busy for longer than its
// startup takes. BBR never sets ssthresh unless it loses, so an unset
// ssthresh is no sign of slow start (a clean 200 ms x 1 Gbit/s path read
// as slow start at 945 Mbit/s in 2 of 10 runs).
func bbrPastStartup(s Sock) bool {
	return s.CC == "bbr" && s.Ssthresh == 0 && s.MinRTT > 0 && s.Busy > bbrStartupRounds*s.MinRTT
}

// senderInfo is what diagnose needs besides the timeline.
func senderInfo(prev, cur Sock, dt time.Duration, f Flow, opt Options) diagnose.Info {
	in := diagnose.Info{
		Sender: cur.Local.Addr().String(), Receiver: cur.Remote.Addr().String(),
		RTT: cur.RTT, MinRTT: cur.MinRTT, HighRTT: cur.RTT, RTTSource: "tcp_info smoothed RTT",
		MSS: int(cur.MSS), Scale: diagnose.ScaleKnown, RwndGrew: true,
		Bytes: f.BytesSent, Duration: dt,
		Segments:     max(cur.DataSegsOut-prev.DataSegsOut, 0),
		Retrans:      f.Retrans,
		RetransBytes: max(cur.BytesRetrans-prev.BytesRetrans, 0),
		RateBps:      opt.RateBps,
		Scope:        "the last " + fmtDur(dt),
		CC:           cur.CC,
		Socket:       &diagnose.Socket{Cwnd: cur.Cwnd, Ssthresh: cur.Ssthresh},
	}
	if opt.HighRTT > 0 {
		in.HighRTT = opt.HighRTT
	}
	in.Ramp = opt.Ramp
	if !cur.WindowScale {
		in.Scale, in.NoScaleSide = diagnose.ScaleNotNegotiated, "one of the hosts"
	}
	if in.RetransBytes == 0 && in.Retrans > 0 { // kernels before 4.19 lack tcpi_bytes_retrans
		in.RetransBytes = in.Retrans * cur.MSS
	}
	if diagnose.QueueStood(cur.RTT, cur.MinRTT) {
		// The smoothed RTT stands well above the minimum: this interval's
		// losses are most likely the queue overflowing, not random loss.
		in.RetransQueued = in.RetransBytes
	}
	return in
}

// fmtDur names an interval: the reads are a few ms apart from the
// nominal interval, which the text need not show.
func fmtDur(d time.Duration) string { return units.FormatDuration(d.Round(10 * time.Millisecond)) }

// Compare judges every socket of cur that passes the filter against its
// state in prev, dt earlier; a socket new since prev is judged against
// zero counters (it existed for less than dt, so its rate reads low).
// Sockets that closed in between are gone. The flows come sorted by
// bytes moved, largest first; idle ones only when all is set, else
// counted in idle, so that the text can say how many it left out.
func Compare(prev, cur []Sock, dt time.Duration, filter Filter, all bool, opt Options) (out []Flow, idle int) {
	before := make(map[string]Sock, len(prev))
	for _, s := range prev {
		before[s.Key()] = s
	}
	out = []Flow{}
	for _, s := range cur {
		if !filter.Match(s) {
			continue
		}
		f := Judge(before[s.Key()], s, dt, opt)
		if f.Direction == DirIdle && !all {
			idle++
			continue
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Flow) int {
		return cmp.Compare(b.BytesSent+b.BytesReceived, a.BytesSent+a.BytesReceived)
	})
	return out, idle
}
