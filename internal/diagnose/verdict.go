package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Verdicts (the vocabulary of DESIGN.md's analyze contract).
const (
	RwndLimited    = "rwnd-limited"
	ZeroWindow     = "zero-window"
	SndbufLimited  = "sndbuf-limited"
	AppLimited     = "app-limited"
	SlowStart      = "slow-start"
	LossLimited    = "loss-limited"
	Bottleneck     = "bottleneck"
	CaptureLimited = "capture-limited"
	Unknown        = "unknown"
)

// Flags.
const (
	FlagNoWindowScaling    = "no-window-scaling"
	FlagWindowScaleUnknown = "window-scale-unknown"
	FlagHardwareDups       = "hardware-duplicates"
	FlagMSSClamped         = "mss-clamped"
	FlagReordering         = "reordering"
	FlagBufferbloat        = "bufferbloat"
	FlagMidStream          = "mid-stream"
	FlagSuperFrames        = "offload-super-frames"
	FlagCoarseClock        = "coarse-timestamps"
	FlagClockSteps         = "clock-steps"
	FlagCaptureDrops       = "capture-drops"
	// FlagRTOStall: the sender waited for retransmission timeouts for a
	// tenth of the transfer or more; FlagPeerUnresponsive: the receiver
	// stopped answering for good while the sender backed off.
	FlagRTOStall         = "rto-stall"
	FlagPeerUnresponsive = "peer-unresponsive"
	// FlagRequestResponse: the sender answers requests from the peer.
	FlagRequestResponse = "request-response"
	// FlagNoRTT: no RTT could be measured; the verdict rests on what
	// needs none (a window closed, the sender idle).
	FlagNoRTT = "no-rtt"
	// FlagInconsistent: the report's numbers contradict each other
	// (tcpflow.CheckInvariants); the analysis says so rather than
	// printing them as fact.
	FlagInconsistent = "inconsistent-numbers"
)

// Scale states of the window scale option.
const (
	ScaleKnown         = "known"
	ScaleNotNegotiated = "not-negotiated"
	ScaleUnknown       = "unknown"
)

// Info is what the producer knows about the flow direction beyond the
// samples.
type Info struct {
	Sender, Receiver string // addresses for the text, e.g. "198.18.0.2"
	// RTT is the best estimate of the path's round trip; RTTSource says
	// how it was measured. MinRTT and HighRTT (90th percentile) judge
	// queueing.
	RTT, MinRTT, HighRTT time.Duration
	RTTSource            string
	MSS                  int
	Scale                string // ScaleKnown, ScaleNotNegotiated, ScaleUnknown
	// ScaleLowerBound is the least shift the capture proves when the
	// scale is unknown.
	ScaleLowerBound int
	// RwndGrew: the receiver's window grew during the flow (autotuning at
	// work); a window that never grew points at a fixed SO_RCVBUF.
	RwndGrew bool
	// NoScaleSide names the end whose SYN lacked the window scale option.
	NoScaleSide string

	Bytes    int64         // unique payload bytes sent
	Duration time.Duration // first data to last acknowledgement
	Segments int64         // data segments sent

	Retrans, RetransFast, RetransRTO, RetransSpurious int64
	// RetransBytes is the payload retransmitted, spurious retransmissions
	// excluded; when known (captures) the loss rate is counted in bytes,
	// since a capture at a TSO sender holds data segments of up to 64 KB
	// but retransmissions of one or a few MSS.
	RetransBytes int64
	// RetransQueued is the part of RetransBytes sent while the RTT stood
	// well above its minimum: losses of a queue overflowing on the path
	// (how loss-based congestion control finds a drop-tail bottleneck's
	// size), not random loss.
	RetransQueued    int64
	ZeroWindowStalls int
	ZeroWindowTime   time.Duration
	// Flags the producer already knows (vantage-*, mid-stream, ...).
	Flags []string
	// CaptureLimited says why the input cannot be judged, if it cannot.
	CaptureLimited string
	// RateBps is the path's bottleneck rate when the user knows it; it
	// sizes the fix and gives the BDP.
	RateBps float64
	// Scope is what the shares are of, for the summary: "" means "the
	// transfer" (a capture); live sockets say "the last 1 s".
	Scope string

	// Timeout stalls: how many, their time (the silence before each
	// retransmission timeout until the data moved again), and whether the
	// receiver stopped answering for good (UnresponsiveTime: from the
	// last progress to the end). SACK is "on", "off" or "" (unknown).
	RTOStalls        int
	StallTime        time.Duration
	PeerUnresponsive bool
	UnresponsiveTime time.Duration
	SACK             string
	// Request/response: answers given, mean think time (request reaching
	// the sender to the answer), and for the first request the time to
	// its ACK at the capture and the think time after it.
	Turns                   int
	ThinkMean               time.Duration
	FirstReqAck, FirstThink time.Duration
	// ClockTick is the capture clock's granularity when coarse; an RTT
	// below it is reported as "< tick".
	ClockTick time.Duration
	// SenderOS and ReceiverOS: the stacks the SYN options look like
	// ("linux", "windows", "bsd", "solaris", "" unknown).
	SenderOS, ReceiverOS string
	// CC is the sender's congestion control when the producer knows it
	// (tcp_info: "cubic", "bbr"); "" when it cannot tell (a capture).
	CC string
}

// Verdict is the diagnosis of one flow direction.
type Verdict struct {
	Verdict string   `json:"verdict"`
	Share   float64  `json:"share"`
	Flags   []string `json:"flags"`
	// Numbers (SI: seconds, bytes, bits/s); zero when not known.
	RTTSeconds    float64            `json:"rtt_s,omitempty"`
	RwndBytes     int64              `json:"rwnd_bytes,omitempty"`
	InflightBytes int64              `json:"inflight_bytes,omitempty"`
	ThroughputBps float64            `json:"throughput_bps"`
	CeilingBps    float64            `json:"ceiling_bps,omitempty"`
	BDPBytes      int64              `json:"bdp_bytes,omitempty"`
	Shares        map[string]float64 `json:"shares"`
	Summary       string             `json:"summary"`
	Fix           string             `json:"fix"`
}

// Thresholds.
const (
	// LossRate above which a congestion-window-bound flow is called
	// loss-limited rather than bottlenecked: drop-tail bottlenecks with
	// CUBIC lose far less than 0.3% at long RTTs.
	LossRate = 0.003
	// lossShare of time in recovery that makes loss the verdict too.
	lossShare = 0.10
)

// Diagnose judges a timeline.
func Diagnose(tl *Timeline, in Info) Verdict {
	v := Verdict{Flags: flags(in), Shares: tl.Shares(), RTTSeconds: in.RTT.Seconds()}
	if in.Duration > 0 {
		v.ThroughputBps = float64(in.Bytes) * 8 / in.Duration.Seconds()
	}
	v.RwndBytes = tl.MaxRwnd
	v.InflightBytes = tl.MaxInflight
	if r := pathRTT(in); v.RwndBytes > 0 && r > 0 {
		v.CeilingBps = pathmodel.WindowCeiling(float64(v.RwndBytes), r)
	}
	if in.RateBps > 0 && in.RTT > 0 {
		v.BDPBytes = int64(math.Round(pathmodel.BDP(in.RateBps, in.RTT)))
	}
	if in.RTT > 0 && in.HighRTT > 2*in.MinRTT && in.HighRTT-in.MinRTT > 20*time.Millisecond {
		v.Flags = appendFlag(v.Flags, FlagBufferbloat)
	}
	switch {
	case in.CaptureLimited != "":
		v.Verdict = CaptureLimited
		v.Summary = "cannot judge this flow: " + in.CaptureLimited
		v.Fix = "capture again so that the capture shows what this one misses (" + in.CaptureLimited + ")"
		return v
	case in.Bytes == 0 || tl.Total() == 0:
		v.Verdict = Unknown
		v.Summary = "no data was sent in this direction"
		v.Fix = "nothing to fix: no transfer to judge"
		return v
	}
	st := dominant(tl)
	v.Share = round4(tl.Share(st))
	switch st {
	case StateZeroWindow:
		v.Verdict = ZeroWindow
		// A receiver whose buffer is full delays its ACKs (Linux sends
		// one at once only if its window would not shrink,
		// __tcp_ack_snd_check): the RTT rises without any queue.
		v.Flags = slices.DeleteFunc(v.Flags, func(f string) bool { return f == FlagBufferbloat })
	case StateRwnd:
		v.Verdict = RwndLimited
	case StateWindowUnknown:
		v.Verdict = CaptureLimited
	case StateApp:
		v.Verdict = AppLimited
	case StateSndbuf:
		v.Verdict = SndbufLimited
	case StateSlowStart:
		v.Verdict = SlowStart
	case StateLoss, StateNetwork:
		v.Verdict = network(tl, in, v.Flags)
		v.Share = round4(tl.Share(StateNetwork) + tl.Share(StateLoss))
	default:
		v.Verdict = Unknown
	}
	stalls(&v, tl, in)
	if in.Turns > 0 {
		v.Flags = appendFlag(v.Flags, FlagRequestResponse)
	}
	v.Summary, v.Fix = explain(v, tl, in)
	return v
}

// stalls names timeout stalls: a receiver that stopped answering, or
// waits for the retransmission timer that took a third of the transfer,
// make the flow loss-limited whatever else held it the rest of the time
// (a window, slow start); a tenth is flagged.
func stalls(v *Verdict, tl *Timeline, in Info) {
	tot := tl.Total()
	if tot <= 0 || (in.RTOStalls == 0 && !in.PeerUnresponsive) {
		return
	}
	if in.PeerUnresponsive {
		v.Flags = appendFlag(v.Flags, FlagPeerUnresponsive)
	}
	if tl.StallTime*10 >= tot || in.StallTime*10 >= tot {
		v.Flags = appendFlag(v.Flags, FlagRTOStall)
	}
	if in.PeerUnresponsive || tl.StallTime*3 >= tot {
		v.Verdict = LossLimited
		v.Share = round4(tl.Share(StateNetwork) + tl.Share(StateLoss))
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// pathRTT is the RTT the window ceiling is computed with: the path's
// (a low percentile of the data's samples, without the queue a full
// window builds), or 0 when the RTT is below the clock's tick (then the
// ceiling is unknown, only its lower bound).
func pathRTT(in Info) time.Duration {
	if in.RTT <= 0 || (in.ClockTick > 0 && in.RTT <= in.ClockTick) {
		return 0
	}
	if in.MinRTT > 0 && in.MinRTT < in.RTT {
		return in.MinRTT
	}
	return in.RTT
}

// dominant returns the state with the most time (ties: precedence).
// Loss recovery and congestion-window-bound time count as one: both are
// the congestion window at work, and network tells which cause it was
// (a flow that lost early may otherwise split its time between them and
// lose to a long slow start).
func dominant(tl *Timeline) State {
	t := tl.StateTime
	best, bt := StateNone, time.Duration(0)
	for st := StateZeroWindow; st < NumStates; st++ {
		d := t[st]
		if st == StateLoss || st == StateNetwork {
			d = t[StateLoss] + t[StateNetwork]
		}
		if d > bt {
			best, bt = st, d
		}
	}
	return best
}

// network splits congestion-window-bound time into its causes.
func network(tl *Timeline, in Info, fl []string) string {
	// Losses at a full queue are the bottleneck's, found by the
	// congestion control probing it; only the others count as loss.
	random := retransRate(in)
	overflow := queueLosses(in)
	if in.RetransBytes > 0 {
		random *= float64(in.RetransBytes-in.RetransQueued) / float64(in.RetransBytes)
	}
	switch {
	case (random >= LossRate || (!overflow && tl.Share(StateLoss) >= lossShare)) && !atPathRate(in):
		return LossLimited
	case in.Retrans == 0 && tl.BusyRounds >= 6 && flat(tl) && !slices.Contains(fl, FlagBufferbloat) && !queueing(in):
		// A flight flat for round after round with no loss and no queue:
		// CUBIC/Reno would keep growing, so the send buffer holds it.
		return SndbufLimited
	}
	return Bottleneck
}

// flat: the flight stayed level after slow start. Over 8 rounds and more
// the first rounds are compared with the last (noise between rounds does
// not matter, slow growth does); over fewer, round with round.
func flat(tl *Timeline) bool {
	if tl.BusyRounds >= 8 {
		return tl.Plateau()
	}
	return tl.FlatRounds*10 >= tl.BusyRounds*7
}

// QueueStood reports whether an RTT sample shows a queue standing on the
// path: at least 1.5x the minimum and 2 ms more. A loss then is most
// likely the queue overflowing, as loss-based congestion control makes a
// drop-tail bottleneck do, rather than random loss, which strikes at any
// RTT (the RTT-based loss discrimination of Biaz and Vaidya,
// "Discriminating congestion losses from wireless losses using
// inter-arrival times at the receiver", 1999, and of TCP Veno). Producers
// use it to fill Info.RetransQueued.
func QueueStood(rtt, minRTT time.Duration) bool {
	return minRTT > 0 && 2*rtt >= 3*minRTT && rtt-minRTT >= 2*time.Millisecond
}

// atPathRate: the flow ran at the path's rate the user gave (85% of it:
// TCP's goodput is 94% of the wire rate). Its losses then cannot be what
// held it: they are the bottleneck's queue overflowing as the flow
// filled it (measured: cubic at 1 Gbit/s x 200 ms lost 0.5% in slow
// start's overshoot and ran at 941-993 Mbit/s over the judged half).
func atPathRate(in Info) bool {
	return in.RateBps > 0 && in.Duration > 0 && float64(in.Bytes)*8/in.Duration.Seconds() >= 0.85*in.RateBps
}

// queueLosses: most retransmitted data was lost while a queue stood.
func queueLosses(in Info) bool {
	return in.RetransBytes > 0 && 3*in.RetransQueued >= 2*in.RetransBytes
}

// queueing: the RTT rose well above its minimum during the transfer (a
// standing queue), which a flight held by the send buffer below the BDP
// does not cause.
func queueing(in Info) bool {
	return in.MinRTT > 0 && in.HighRTT > in.MinRTT+in.MinRTT/4+2*time.Millisecond
}

// retransRate is the share of the data retransmitted (not counting
// spurious retransmissions): by bytes when known, else by segments.
func retransRate(in Info) float64 {
	switch {
	case in.RetransBytes > 0 && in.Bytes > 0:
		return float64(in.RetransBytes) / float64(in.Bytes)
	case in.Segments > 0:
		return float64(max(in.Retrans-in.RetransSpurious, 0)) / float64(in.Segments)
	}
	return 0
}

func flags(in Info) []string {
	var f []string
	for _, x := range in.Flags {
		f = appendFlag(f, x)
	}
	switch in.Scale {
	case ScaleNotNegotiated:
		f = appendFlag(f, FlagNoWindowScaling)
	case ScaleUnknown:
		f = appendFlag(f, FlagWindowScaleUnknown)
	}
	if f == nil {
		f = []string{}
	}
	return f
}

func appendFlag(f []string, x string) []string {
	if slices.Contains(f, x) {
		return f
	}
	f = append(f, x)
	slices.Sort(f)
	return f
}

// target is the rate the fix sizes buffers for: the path's if given,
// else the next decade above the current ceiling from 100 Mbit/s.
func target(in Info, ceiling float64) (float64, string) {
	if in.RateBps > 0 {
		return in.RateBps, ""
	}
	t := 100e6
	for t <= ceiling*1.5 && t < 100e9 {
		t *= 10
	}
	return t, " (give --rate with the path's rate to size it for your path)"
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func dur(d time.Duration) string { return units.FormatDuration(d) }

func bytesIn(n int64) string {
	if n < 100_000 {
		return units.FormatInt(n) + " bytes"
	}
	return units.FormatBytes(float64(n))
}

func rateWords(bps float64) string {
	return fmt.Sprintf("%s (%s)", units.FormatByteRate(bps/8), units.FormatRate(bps))
}

// rwndFix is the fix of a flow pinned at the receiver's window: window
// scaling off, an application's SO_RCVBUF, another stack, or tcp_rmem.
func rwndFix(v Verdict, in Info, rcv, rtt, achieved string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the receiver %s advertises at most %s; at %s that caps the flow at %s (achieved %s). ", rcv, bytesIn(v.RwndBytes), rtt, rateWords(v.CeilingBps), achieved)
	goal, note := target(in, v.CeilingBps)
	need := pathmodel.BDP(goal, in.RTT)
	buf := pathmodel.BufferFor(need, pathmodel.DefaultScalingRatio)
	switch {
	case in.Scale == ScaleNotNegotiated:
		who := "one side"
		if in.NoScaleSide != "" {
			who = in.NoScaleSide
		}
		fmt.Fprintf(&b, "Window scaling is off on this connection (the SYN from %s carried no window-scale option), so no window can exceed 65,535 bytes: "+
			"set net.ipv4.tcp_window_scaling=1 on both hosts and check firewalls, load balancers and proxies on the path that strip TCP options; "+
			"%s needs a window of %s at %s%s.", who, units.FormatRate(goal), bytesIn(int64(need)), rtt, note)
	case !in.RwndGrew && v.RwndBytes < 64*1024:
		fmt.Fprintf(&b, "The window never grew, as autotuning would make it: the receiving application probably sets SO_RCVBUF (autotuning is then off): "+
			"raise it to >= %s or remove it (e.g. nginx listen ... rcvbuf=, iperf3 -w); %s at %s needs a window of %s (a buffer of %s, which SO_RCVBUF=%s gives since the kernel doubles it)%s.",
			bytesIn((buf+1)/2), units.FormatRate(goal), rtt, bytesIn(int64(need)), bytesIn(buf), bytesIn((buf+1)/2), note)
	case stackFix(in.ReceiverOS, "receive", buf) != "":
		fmt.Fprintf(&b, "The window stopped at the receiver's buffer limit. %s %s; %s at %s needs a window of %s%s.",
			rcv, stackFix(in.ReceiverOS, "receive", buf), units.FormatRate(goal), rtt, bytesIn(int64(need)), note)
	default:
		fmt.Fprintf(&b, "The window stopped at the receiver's buffer limit: raise net.ipv4.tcp_rmem's maximum on %s to >= %d, or, if its application sets SO_RCVBUF (iperf3 -w, nginx rcvbuf=), "+
			"that value to >= %d (and net.core.rmem_max, which clamps it); %s at %s needs a window of %s%s.", rcv, buf, (buf+1)/2, units.FormatRate(goal), rtt, bytesIn(int64(need)), note)
	}
	return b.String()
}

// explain writes the one-line summary and the fix.
func explain(v Verdict, tl *Timeline, in Info) (summary, fix string) {
	rcv, snd := orWord(in.Receiver, "the receiver"), orWord(in.Sender, "the sender")
	rtt := rttWords(in)
	achieved := rateWords(v.ThroughputBps)
	share := pct(v.Share) + " of " + orWord(in.Scope, "the transfer")
	switch v.Verdict {
	case RwndLimited:
		summary = fmt.Sprintf("%s the sender was pinned at the receiver's window of %s", share, bytesIn(v.RwndBytes))
		fix = rwndFix(v, in, rcv, rtt, achieved)
	case ZeroWindow:
		summary = fmt.Sprintf("%s the receiver's window was zero or held down by unread data (%d stall(s), %s in all)", share, in.ZeroWindowStalls, dur(in.ZeroWindowTime))
		fix = fmt.Sprintf("the receiving application on %s stops reading: its buffer fills and it advertises a zero (or closed, under one segment) window for %s in %d stall(s), "+
			"and a window that opens only as far as it reads. The network and the TCP buffers are not the limit; look at the reader (CPU, disk writes, a blocked thread, a slow consumer) on %s.",
			rcv, dur(in.ZeroWindowTime), in.ZeroWindowStalls, rcv)
	case SndbufLimited:
		summary = fmt.Sprintf("%s the flight stayed flat at %s, below the receiver's window, with no loss", share, bytesIn(tl.MaxInflight))
		goal, note := target(in, pathmodel.WindowCeiling(float64(tl.MaxInflight), in.RTT))
		need := pathmodel.BDP(goal, in.RTT)
		if sf := stackFix(in.SenderOS, "send", pathmodel.BufferFor(need, pathmodel.SendRatio)); sf != "" {
			fix = fmt.Sprintf("the sender %s never had more than %s in flight though %s allowed %s: its send buffer caps it at %s. %s %s; %s at %s needs %s in flight%s.",
				snd, bytesIn(tl.MaxInflight), rcv, bytesIn(max(tl.MaxRwnd, 0)), rtt, snd, sf, units.FormatRate(goal), rtt, bytesIn(int64(need)), note)
			break
		}
		fix = fmt.Sprintf("the sender %s never had more than %s in flight though %s allowed %s: its send buffer caps it at %s at %s. "+
			"Raise net.ipv4.tcp_wmem's maximum on %s to >= %d (or the application's SO_SNDBUF); %s at %s needs %s in flight%s.",
			snd, bytesIn(tl.MaxInflight), rcv, bytesIn(max(tl.MaxRwnd, 0)), rateWords(pathmodel.WindowCeiling(float64(tl.MaxInflight), in.RTT)), rtt,
			snd, pathmodel.BufferFor(need, pathmodel.SendRatio), units.FormatRate(goal), rtt, bytesIn(int64(need)), note)
	case AppLimited:
		summary, fix = appText(v, tl, in, share, snd, rcv)
	case SlowStart:
		summary = fmt.Sprintf("%s was spent in slow start (%d round trips of %s)", share, tl.SlowStartRounds, rtt)
		fix = fmt.Sprintf("the transfer is too short to leave slow start: it took %d round trips at %s, each doubling the flight from the initial window. "+
			"Reuse connections (keep-alive, HTTP/2), raise the sender's initial window (ip route change ... initcwnd 20) and the receiver's (initrwnd 20), "+
			"and set net.ipv4.tcp_slow_start_after_idle=0 on %s so reused connections keep their window.", tl.SlowStartRounds, rtt, snd)
	case LossLimited:
		summary, fix = lossText(v, in, rtt, snd, rcv)
	case Bottleneck:
		summary = fmt.Sprintf("%s the sender was bound by its congestion window, not by either host: the path is the limit (achieved %s)", share, achieved)
		fix = "the flow runs at what the path gives; host tuning will not make it faster."
		switch {
		case in.Retrans > 0 && queueLosses(in):
			fix += fmt.Sprintf(" Its %d retransmissions came while the RTT stood well above its minimum: the bottleneck's queue overflowing, not random loss.", in.Retrans)
		case in.Retrans > 0 && atPathRate(in):
			fix += fmt.Sprintf(" Its %d retransmissions came while it ran at the path's rate: the bottleneck's queue overflowing as the flow filled it, not random loss.", in.Retrans)
		}
		if slices.Contains(v.Flags, FlagBufferbloat) {
			fix += fmt.Sprintf(" The RTT rose from %s to %s while it ran: a queue on the path fills (bufferbloat); use fq_codel or cake on the bottleneck%s.", dur(in.MinRTT), dur(in.HighRTT), bbrAdvice(in.CC, ", or BBR on the sender"))
		}
	case CaptureLimited:
		lb := int64(0)
		if in.ScaleLowerBound > 0 {
			lb = int64(in.ScaleLowerBound)
		}
		summary = fmt.Sprintf("%s the flight sat at the window's lower bound, but the window scale is unknown", share)
		fix = fmt.Sprintf("the capture started after the handshake, so the window scale is unknown (the flight proves a shift of at least %d); "+
			"the flow may be limited by the receiver's window. Capture from the start of the connection (the SYNs) to judge it.", lb)
	default:
		summary = "no state dominates"
		fix = "no fix can be derived from this flow"
	}
	return summary, fix
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// rttWords is the RTT for the text: below the capture clock's tick it
// is only known to be under the tick.
func rttWords(in Info) string {
	if in.ClockTick > 0 && in.RTT <= in.ClockTick {
		return "< " + dur(in.ClockTick) + " (clock resolution)"
	}
	return dur(in.RTT)
}

// appText explains app-limited time: idle gaps (nothing in flight),
// waits with room to send, and request/response turns. The fix blames
// the end the flow waits on: with turns, the requester and the answer's
// think time, not "write more at once".
func appText(v Verdict, tl *Timeline, in Info, share, snd, rcv string) (summary, fix string) {
	var parts []string
	if tl.IdleGaps > 0 {
		parts = append(parts, fmt.Sprintf("%d idle gap(s) with nothing in flight, %s", tl.IdleGaps, dur(tl.IdleTime)))
	}
	if tl.SendGaps > 0 {
		parts = append(parts, fmt.Sprintf("%d wait(s) with room to send, %s", tl.SendGaps, dur(tl.SendGapTime)))
	}
	if other := tl.StateTime[StateApp] - tl.IdleTime - tl.SendGapTime; len(parts) == 0 || other*10 > tl.StateTime[StateApp] {
		if other > 0 {
			parts = append(parts, fmt.Sprintf("%s with data unsent", dur(other)))
		}
	}
	summary = fmt.Sprintf("%s the sender had nothing to send (%s)", share, strings.Join(parts, "; "))
	if in.Turns == 0 {
		fix = fmt.Sprintf("the application on %s is the limit, not TCP: it had nothing to send %s of the time. "+
			"Buffer and window tuning will not help; make it write more at once, pipeline requests instead of waiting for each answer, or look at what it waits for.", snd, pct(v.Share))
		return summary, fix
	}
	summary += fmt.Sprintf("; it answered %d request(s) from %s, %s after each reached it (mean)", in.Turns, rcv, dur(in.ThinkMean))
	if in.FirstReqAck > 0 {
		summary += fmt.Sprintf("; the first was acknowledged in %s and answered %s later", dur(in.FirstReqAck), dur(in.FirstThink))
	}
	fix = fmt.Sprintf("the flow waits on the conversation, not on TCP: %s answers requests from %s one at a time (%d here), thinking %s on average before each answer, and waits for the next request in between. "+
		"Fewer round trips help: pipeline or multiplex the requests on %s (HTTP/2, batched queries, larger reads), and look at what delays the answers on %s (a slow backend, disk, locks). Buffer and window tuning will not help.",
		snd, rcv, in.Turns, dur(in.ThinkMean), rcv, snd)
	return summary, fix
}

// lossText explains a loss-limited flow, naming timeout stalls and a
// receiver that stopped answering, with the fix each needs.
func lossText(v Verdict, in Info, rtt, snd, rcv string) (summary, fix string) {
	segs := fmt.Sprintf("%d segments", in.Retrans)
	if in.RetransFast+in.RetransRTO > 0 {
		segs += fmt.Sprintf(": %d fast, %d after a timeout", in.RetransFast, in.RetransRTO)
	}
	switch {
	case slices.Contains(v.Flags, FlagPeerUnresponsive):
		summary = fmt.Sprintf("the receiver %s stopped answering: %s retransmitted (%s) and backed off for %s with no ACK, %s of %s",
			rcv, snd, segs, dur(in.UnresponsiveTime), pct(v.Share), orWord(in.Scope, "the time"))
		fix = fmt.Sprintf("%s acknowledged nothing for the last %s: it crashed, lost its network, or something on the path (a firewall or NAT whose state expired, a route change, an outage) drops this connection. "+
			"No TCP or buffer tuning helps: check %s and the state tables and routes on the path; to give up sooner than the default 15 retries (about 15 minutes), lower net.ipv4.tcp_retries2 on %s or set TCP_USER_TIMEOUT in the application.",
			rcv, dur(in.UnresponsiveTime), rcv, snd)
		return summary, fix
	case slices.Contains(v.Flags, FlagRTOStall):
		summary = fmt.Sprintf("the sender stalled waiting for retransmission timeouts %d time(s), %s in all; %.2f%% of the data was retransmitted (%s); %s of %s recovering",
			in.RTOStalls, dur(in.StallTime), 100*retransRate(in), segs, pct(v.Share), orWord(in.Scope, "the time"))
		fix = fmt.Sprintf("losses in bursts (an outage or link flap, a middlebox or policer dropping a burst, a queue flushed) left the sender without the duplicate ACKs that trigger a fast retransmit, so it waited for its retransmission timer (200 ms or more, doubling each time): %s in all. "+
			"Find the outage on the path (interface errors and flaps, Wi-Fi roaming, policers); buffer tuning will not help. ", dur(in.StallTime))
		if in.SACK == "off" {
			fix += "This connection runs without SACK: enable it on both ends (net.ipv4.tcp_sack=1) and check middleboxes that strip the option, so that one burst costs one recovery, not a timeout. "
		}
		fix += fmt.Sprintf("On %s, RACK-TLP (Linux >= 4.18, net.ipv4.tcp_recovery=1, the default) turns many tail losses into fast recoveries.", snd)
		return summary, fix
	}
	summary = fmt.Sprintf("%.2f%% of the data was retransmitted (%s); the sender spent %s of %s recovering or below its window",
		100*retransRate(in), segs, pct(v.Share), orWord(in.Scope, "the time"))
	fix = fmt.Sprintf("the path loses packets: %d segments retransmitted, %.2f%% of the data. ", in.Retrans, 100*retransRate(in))
	switch in.CC {
	case "bbr":
		fix += fmt.Sprintf("%s already runs BBR, which does not back off at each loss: at this much loss the path itself must be fixed. "+
			"Find the loss (interface errors, a policer, Wi-Fi, a full queue).", snd)
	default:
		fix += fmt.Sprintf("Loss-based congestion control (CUBIC, Reno) halves its window at each loss, and at %s it takes long to grow back. "+
			"Find the loss (interface errors, a policer, Wi-Fi, a full queue)%s.", rtt,
			bbrAdvice(in.CC, ", and consider BBR on "+snd+" (net.ipv4.tcp_congestion_control=bbr with net.core.default_qdisc=fq)"))
	}
	return summary, fix
}

// bbrAdvice is the advice to switch to BBR for a sender running cc:
// none when it runs BBR already; for a congestion control not known (a
// capture cannot tell), the advice is conditional.
func bbrAdvice(cc, advice string) string {
	switch cc {
	case "bbr", "bbr2", "bbr3":
		return ""
	case "":
		return advice + ", if it does not run BBR already"
	}
	return advice + " (it runs " + cc + ")"
}

// stackFix is the buffer setting to raise on a non-Linux end (the stack
// its SYN options look like), or "" for Linux and unknown stacks (the
// Linux text then applies).
func stackFix(stack, dir string, buf int64) string {
	switch stack {
	case "windows":
		if dir == "receive" {
			return fmt.Sprintf("looks like a Windows stack: check receive window auto-tuning (netsh interface tcp show global; netsh interface tcp set global autotuninglevel=normal) and any SO_RCVBUF the application sets (>= %d)", buf)
		}
		return fmt.Sprintf("looks like a Windows stack: Windows sizes send buffers itself (ideal send backlog); raise the SO_SNDBUF the application sets (>= %d) or remove it", buf)
	case "bsd":
		long, short := "recv", "rcv"
		if dir != "receive" {
			long, short = "send", "snd"
		}
		return fmt.Sprintf("looks like a macOS or FreeBSD stack: raise kern.ipc.maxsockbuf and net.inet.tcp.%sbuf_max (FreeBSD) or net.inet.tcp.auto%sbufmax (macOS) with sysctl to >= %d, and keep net.inet.tcp.%sbuf_auto=1",
			long, short, buf, long)
	case "solaris":
		long := "recv"
		if dir != "receive" {
			long = "send"
		}
		return fmt.Sprintf("looks like a Solaris or illumos stack: raise the TCP buffers with ipadm set-prop -p max_buf=%d tcp and -p %s_buf=%d tcp (or ndd /dev/tcp tcp_max_buf)", 2*buf, long, buf)
	}
	return ""
}
