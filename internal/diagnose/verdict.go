package diagnose

import (
	"math"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
)

// Verdicts: the vocabulary every producer's document carries (analyze's
// directions[].verdict, flows, test's flow.verdict; docs/json.md).
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
	// FlagWaitsOnPeer: the sender sends in exchanges and waits for the
	// peer's answer after each, and the peer's time to answer is most of
	// the waiting: the idle time is the peer's (or a proxy's between).
	FlagWaitsOnPeer = "waits-on-peer"
	// FlagNoRTT: no RTT could be measured; the verdict rests on what
	// needs none (a window closed, the sender idle).
	FlagNoRTT = "no-rtt"
	// FlagPayloadOnly: the capture holds no ACK without payload from the
	// receiver (filtered to segments with data); a conversation's turns
	// are judged from when each message was seen, the flight is unknown.
	FlagPayloadOnly = "payload-only"
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
	// RTTSamples is how many samples MinRTT and HighRTT come from (0:
	// unknown), LoneACKSamples how many of them timed an ACK that covered
	// under two segments, which a receiver may have held on its
	// delayed-ACK timer: over a tenth, and HighRTT may be that delay.
	RTTSamples, LoneACKSamples int64
	MSS                        int
	Scale                      string // ScaleKnown, ScaleNotNegotiated, ScaleUnknown
	// ScaleLowerBound is the least shift the capture proves when the
	// scale is unknown.
	ScaleLowerBound int
	// RwndGrew: the receiver's window grew during the flow (autotuning at
	// work); a window that never grew points at a fixed SO_RCVBUF.
	RwndGrew bool
	// NoScaleSide names the end whose SYN lacked the window scale option.
	NoScaleSide string

	Bytes    int64         // unique payload bytes sent
	Duration time.Duration // first data to last acknowledgement, at least one RTT
	Segments int64         // data segments sent

	Retrans, RetransFast, RetransRTO, RetransSpurious int64
	// RetransProbe: tail loss probes among the retransmissions.
	RetransProbe int64
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
	// RateBps is the path's bottleneck rate (on the wire) when the user
	// knows it; it sizes the fix and gives the BDP.
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
	// PeerTurns and PeerThinkMean are the same of the other direction:
	// the peer answering this sender's messages, and its time to answer
	// (this sender's message reaching it to its answer).
	PeerTurns     int
	PeerThinkMean time.Duration
	// ReceiverClient: the receiver opened the connection (its SYN was
	// seen), so its turns are a client's next requests.
	ReceiverClient bool
	// ClockTick is the capture clock's granularity when coarse; an RTT
	// below it is reported as "< tick".
	ClockTick time.Duration
	// SenderOS and ReceiverOS: the stacks the SYN options look like
	// ("linux", "windows", "bsd", "solaris", "" unknown).
	SenderOS, ReceiverOS string
	// CC is the sender's congestion control when the producer knows it
	// (tcp_info: "cubic", "bbr"); "" when it cannot tell (a capture).
	CC string
	// Ramp is how the rate moved over the judged part, when the producer
	// measured it (a test's phase): one still ramping is slow start.
	Ramp *Ramp
	// Vantage is where the evidence was taken (VantageSender, ...);
	// Socket what a live socket adds (flows), nil for a capture.
	Vantage string
	Socket  *Socket
	// Capture: the evidence is a packet capture's, whose clock and
	// filter limit what it can time (untimed).
	Capture bool
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
	if rttRose(in) {
		v.Flags = appendFlag(v.Flags, FlagBufferbloat)
	}
	switch {
	case in.CaptureLimited != "":
		v.Verdict = CaptureLimited
		v.Summary = "cannot judge this flow: " + in.CaptureLimited
		v.Fix = "capture again so that the capture shows what this one misses (" + in.CaptureLimited + ")"
		return v
	case socketVerdict(&v, in):
		return v
	case in.Bytes == 0 || tl.Total() == 0:
		v.Verdict = Unknown
		v.Summary = "no data was sent in this direction"
		if in.Scope != "" {
			v.Summary = "no data moved in " + in.Scope
		}
		v.Fix = "nothing to fix: no transfer to judge"
		return v
	}
	st := dominant(tl)
	v.Share = round4(tl.Share(st))
	if in.Ramp != nil && in.Ramp.Ramping() && st != StateZeroWindow && st != StateApp {
		v.Verdict = SlowStart
		v.Summary, v.Fix = rampText(*in.Ramp)
		return v
	}
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
	if v.Verdict == AppLimited && waitsOnPeer(in) {
		v.Flags = appendFlag(v.Flags, FlagWaitsOnPeer)
	}
	if why := untimed(&v, tl, in); why != "" {
		in.CaptureLimited = why
		return Diagnose(tl, in)
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
	case random > 0 && neverFilled(in) && !atPathRate(in) && lossHolds(random, in):
		// No queue ever stood: the flow never filled the bottleneck, so
		// its losses, not a full link, held its window (measured: 0.03%
		// random loss, cubic at 37 of 150 Mbit/s x 80 ms, the RTT's 90th
		// percentile 81.4 ms against 80.0: called a bottleneck).
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

// atPathRate: the flow ran at the path's rate the user gave
// (WireAtPathRate). Its losses then cannot be what held it.
func atPathRate(in Info) bool {
	return in.Duration > 0 && WireAtPathRate(float64(in.Bytes)*8/in.Duration.Seconds(), in.RateBps)
}

// rttRose: the RTT's 90th percentile stood over twice its least and
// 20 ms above it, a queue filling (bufferbloat). When the producer counts
// its samples, the 90th percentile must be neither one sample (under 10)
// nor a receiver's delayed ACK (40-200 ms, no queue): lone ACKs, those
// that covered under two segments, must be under a tenth of them.
func rttRose(in Info) bool {
	if in.RTTSamples > 0 && (in.RTTSamples < 10 || 10*in.LoneACKSamples >= in.RTTSamples) {
		return false
	}
	return in.RTT > 0 && in.HighRTT > 2*in.MinRTT && in.HighRTT-in.MinRTT > 20*time.Millisecond
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

// neverFilled: the RTT's 90th percentile, over enough samples to tell
// (a capture's), stayed within a quarter of its least (queueing): no
// queue stood at the bottleneck at any time that counts.
func neverFilled(in Info) bool {
	return in.RTTSamples >= 20 && in.HighRTT > 0 && !queueing(in)
}

// cubicOver is how far over the Mathis (Reno) bound of its loss rate a
// loss-based flow held by its losses runs: CUBIC grows back faster
// between losses (measured: 3.6-3.7x at 0.03% random loss on 80 and
// 150 ms paths). BBR, which does not back off at random loss, runs far
// past it (11x at the link's rate on the same path): not held.
const cubicOver = 5

// lossHolds: losses at share random hold a loss-based flow near the rate
// it carried: the Mathis bound under twice that rate (LossExplains) and
// the rate no more than cubicOver times the bound.
func lossHolds(random float64, in Info) bool {
	if in.Duration <= 0 {
		return false
	}
	bps := float64(in.Bytes) * 8 / in.Duration.Seconds()
	bound := mathisBound(random, in.MSS, pathRTT(in))
	return bound > 0 && bound < 2*bps && bps <= cubicOver*bound // LossExplains, and not far past it
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
