package diagnose

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// ReceiverView is what the receiving host's own socket (tcp_info at the
// receiver of a download) shows: its window, the rate and RTT it saw,
// the segments that arrived out of order. From there the sender's
// congestion window, its send buffer and the path's losses are not seen
// (a segment out of order is a loss or reordering: which is not told
// from here); what the sender reported of itself, if anything (an iperf3
// server's retransmits, cwnd and RTT), is Sender.
type ReceiverView struct {
	Bytes      int64
	Bps        float64       // the steady rate
	RTT        time.Duration // the receiver's RTT estimate under load
	Rounds     float64       // the transfer's length in round trips (0 unknown)
	InFlight   float64       // bytes in flight: Bps x RTT
	MaxWindow  int64         // the most it advertised over the steady half
	Ceiling    int64         // the window its tcp_rmem allows (path model), 0 unknown
	OutOfOrder int64         // segments that arrived out of order
	PathBps    float64       // what the path carries as payload (--rate's goodput), 0 unknown
	Sender     *SenderReport
}

// SenderReport is what a far sender reported of its own sending; -1 is
// unknown.
type SenderReport struct {
	Retrans, Bytes, Cwnd int64
	RTT                  time.Duration
	MinRTT               time.Duration // the path's least RTT, as this end measured it
	Known                string        // the report in words, for the text
}

// Where the receiver's view places what held a download.
const (
	HeldByLength        = "length"         // over in a few round trips: slow start
	HeldUnknown         = "unknown"        // no window or RTT reported
	HeldByRcvbuf        = "rcvbuf"         // its window filled, at what tcp_rmem allows
	HeldByWindow        = "window"         // its window filled, autotuning still growing it
	HeldAtRate          = "rate"           // at the path's known rate
	HeldBySenderOrPath  = "sender-or-path" // its window open: the sender or the path, not told apart from here
	HeldByOutOfOrder    = "out-of-order"   // its window open, and segments out of order enough to hold it: loss or reordering
	HeldByPathLoss      = "path-loss"      // the sender's losses hold its window (the sender said)
	HeldBySender        = "sender"         // the sender's cwnd far under the window, few losses (the sender said)
	HeldByPathQueue     = "path-queue"     // the sender's RTT rose: it filled the bottleneck (the sender said)
	shortRounds         = 20               // a transfer over in fewer is mostly slow start
	windowBound         = 0.8              // in flight / window: the window held the sender back
	atCeiling           = 0.85             // window / ceiling: the setting, not autotuning, is the limit
	senderCwndUnderHalf = 0.5              // the sender's cwnd against the window: it held itself
)

// ReceiverJudgement is the receiver's verdict and where it places the
// limit (Held*), for the producer to name the host and setting.
type ReceiverJudgement struct {
	Verdict Verdict
	Held    string
}

// JudgeReceiver judges a download from the receiver's socket: its own
// window is told (this host's tcp_rmem, or autotuning still growing),
// and a transfer too short to leave slow start; with the window open,
// the rest is the sender's or the path's, which only the sender's
// report (or a test against longhaul serve) tells apart.
func JudgeReceiver(r ReceiverView) ReceiverJudgement {
	v := Verdict{Verdict: Unknown, Flags: []string{}, Shares: map[string]float64{}, ThroughputBps: r.Bps, RTTSeconds: r.RTT.Seconds()}
	if r.Sender != nil {
		v.RTTSeconds = senderRTT(r, *r.Sender).Seconds()
	}
	held := func(h, verdict, summary string) ReceiverJudgement {
		v.Verdict, v.Summary = verdict, summary
		return ReceiverJudgement{Verdict: v, Held: h}
	}
	full := r.InFlight >= windowBound*float64(r.MaxWindow)
	switch {
	case r.Rounds > 0 && r.Rounds < shortRounds:
		return held(HeldByLength, SlowStart, "the download was over in a few round trips, mostly slow start")
	case r.MaxWindow <= 0 || r.RTT <= 0:
		return held(HeldUnknown, Unknown, "unknown: the kernel reported no receive window or RTT for the download")
	case AtPathRate(r.Bps, r.PathBps):
		// At the path's rate nothing on either end held it back, whatever
		// the window did.
		return held(HeldAtRate, Bottleneck, "the download ran at the path's rate (--rate)")
	case full && r.Ceiling > 0 && float64(r.MaxWindow) >= atCeiling*float64(r.Ceiling):
		return held(HeldByRcvbuf, RwndLimited, windowText(r))
	case full:
		return held(HeldByWindow, RwndLimited, windowText(r))
	}
	s := r.Sender
	if s != nil && s.Retrans > 0 && s.Bytes > 0 && LossExplains(SegmentShare(s.Retrans, s.Bytes, TypicalMSS), TypicalMSS, senderRTT(r, *s), r.Bps) {
		return held(HeldByPathLoss, LossLimited, fmt.Sprintf("the server's losses (%d retransmitted segments) held its congestion window below what this host's window allowed", s.Retrans))
	}
	switch {
	case s == nil && r.OutOfOrderBinds():
		return held(HeldByOutOfOrder, Unknown, fmt.Sprintf("%d segments arrived out of order (loss or reordering: which is not told from the receiver), enough to hold a Reno or CUBIC flow near this rate", r.OutOfOrder))
	case s != nil && s.Retrans < 0 && r.OutOfOrderBinds():
		return held(HeldByOutOfOrder, Unknown, "segments arrived out of order (loss or reordering); the server did not say how many it retransmitted")
	case s != nil && s.Cwnd > 0 && float64(s.Cwnd) < senderCwndUnderHalf*float64(r.MaxWindow):
		return held(HeldBySender, Unknown, "the server's congestion window stayed far below this host's window with few losses: held at the server, by what is not seen from here")
	case s != nil && s.RTT > 0 && QueueStood(s.RTT, s.MinRTT):
		return held(HeldByPathQueue, Bottleneck, "the server's RTT rose over the path's least: the flow filled the bottleneck")
	}
	summary := "this host's window was open: the sender or the path held the flow"
	if r.Sender != nil {
		summary += "; " + r.Sender.Known
	}
	return held(HeldBySenderOrPath, Unknown, summary)
}

func windowText(r ReceiverView) string {
	s := fmt.Sprintf("the data in flight (%s) filled the window this host advertised (%s): the server sent as much as that window let it",
		units.FormatBytes(r.InFlight), units.FormatBytes(float64(r.MaxWindow)))
	if r.Sender != nil {
		s += "; " + r.Sender.Known
	}
	return s
}

// senderRTT is the RTT the sender's losses are weighed at: its own
// report's, else the receiver's.
func senderRTT(r ReceiverView, s SenderReport) time.Duration {
	if s.RTT > 0 {
		return s.RTT
	}
	return r.RTT
}

// TypicalMSS is the segment counts are read at when the sender's is not
// known (a 1500-byte MTU with timestamps).
const TypicalMSS = 1448

// SegmentShare is the share of bytes' segments of mss bytes (0:
// TypicalMSS) that n segments are: a count of resent or out-of-order
// segments as a loss rate. 0 when either count is.
func SegmentShare(n, bytes int64, mss int) float64 {
	if n <= 0 || bytes <= 0 {
		return 0
	}
	if mss <= 0 {
		mss = TypicalMSS
	}
	return float64(n) * float64(mss) / float64(bytes)
}

// OutOfOrderBinds: were the out-of-order arrivals all losses, they
// would hold a Reno or CUBIC flow near its rate (LossExplains); a
// handful among millions of segments does not.
func (r ReceiverView) OutOfOrderBinds() bool {
	return LossExplains(SegmentShare(r.OutOfOrder, r.Bytes, TypicalMSS), TypicalMSS, r.RTT, r.Bps)
}
