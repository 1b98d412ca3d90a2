// The words of a verdict: its summary and its fix, with the numbers
// that make them, for each limit of Diagnose's vocabulary.

package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

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
		if in.Socket != nil {
			return liveSlowStart(share, *in.Socket, in)
		}
		summary = fmt.Sprintf("%s was spent in slow start (%d round trips of %s)", share, tl.SlowStartRounds, rtt)
		fix = fmt.Sprintf("the transfer is too short to leave slow start: it took %d round trips at %s, each doubling the flight from the initial window. "+
			"Reuse connections (keep-alive, HTTP/2), raise the sender's initial window (ip route change ... initcwnd 20) and the receiver's (initrwnd 20), "+
			"and set net.ipv4.tcp_slow_start_after_idle=0 on %s so reused connections keep their window.", tl.SlowStartRounds, rtt, snd)
	case LossLimited:
		summary, fix = lossText(v, in, rtt, snd, rcv)
	case Bottleneck:
		summary = fmt.Sprintf("%s the sender was bound by its congestion window, not by either host: the path is the limit (achieved %s)", share, achieved)
		// Not "host tuning will not help": a host's congestion control or
		// pacing can (a loss-held flow called a bottleneck here carries
		// more with BBR; bloat shrinks with it), and only test measures that.
		fix = "the flow runs at what the path gives: neither host's buffers limit it."
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
	if len(parts) == 0 && tl.IdleTime > 0 {
		// tcp_info (flows) knows the idle total but not its gaps.
		parts = append(parts, fmt.Sprintf("%s idle with nothing in flight", dur(tl.IdleTime)))
	}
	summary = share + " the sender had nothing to send"
	if len(parts) > 0 {
		summary += " (" + strings.Join(parts, "; ") + ")"
	}
	if in.Turns == 0 {
		fix = fmt.Sprintf("the application on %s is the limit, not TCP: it had nothing to send %s of the time. "+
			"Buffer and window tuning will not help; make it write more at once, pipeline requests instead of waiting for each answer, or look at what it waits for.", snd, pct(v.Share))
		return summary, fix
	}
	if slices.Contains(v.Flags, FlagWaitsOnPeer) {
		return waitText(in, summary, snd, rcv)
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

// waitsOnPeer reports whether a sender in a conversation waits on its
// peer: both answer each other, and the peer's time to answer (all its
// answers) is more than twice the sender's and at least a fifth of the
// transfer. The sender's idle time is then the peer's doing.
func waitsOnPeer(in Info) bool {
	if in.Turns == 0 || in.PeerTurns == 0 {
		return false
	}
	peer := in.PeerThinkMean * time.Duration(in.PeerTurns)
	own := in.ThinkMean * time.Duration(in.Turns)
	return peer > 2*own && (in.Duration == 0 || peer*5 >= in.Duration)
}

// waitText explains a sender that waits on its peer's answers: the
// peer (or a proxy between them) is named, with its latency. A peer that
// opened the connection is a client taking its time between requests.
func waitText(in Info, summary, snd, rcv string) (string, string) {
	peer := in.PeerThinkMean * time.Duration(in.PeerTurns)
	of := ""
	if in.Duration > 0 {
		of = fmt.Sprintf(" of the %s", dur(in.Duration))
	}
	if in.ReceiverClient {
		summary += fmt.Sprintf("; it answered %d request(s) from %s in %s (mean) and waited for the next: %s took %s after each answer reached it (mean; %s in all%s)",
			in.Turns, rcv, dur(in.ThinkMean), rcv, dur(in.PeerThinkMean), dur(peer), of)
		fix := fmt.Sprintf("the flow waits on the client %s, not on TCP: it sends one request at a time and takes %s after each answer before the next (%s in all%s): a user, or the client application's own processing or pacing. "+
			"Pipeline or multiplex the requests on %s (HTTP/2, batched queries); nothing on %s and no buffer or window tuning will help.",
			rcv, dur(in.PeerThinkMean), dur(peer), of, rcv, snd)
		return summary, fix
	}
	summary += fmt.Sprintf("; it sent in exchanges, waiting for %s to answer %d time(s): %s answered %s after each message reached it (mean; %s in all%s), %s itself answered in %s",
		rcv, in.PeerTurns, rcv, dur(in.PeerThinkMean), dur(peer), of, snd, dur(in.ThinkMean))
	fix := fmt.Sprintf("the flow waits on %s, not on TCP: %s sends in exchanges and waits for %s's answer after each, and %s (or a proxy between them) takes %s on average to answer, %s in all%s. "+
		"Look at what delays the answers on %s (a slow backend, disk, content scanning, locks) or on a proxy in between; fewer exchanges help: pipeline on %s (SMTP PIPELINING and CHUNKING, HTTP/2, batched queries, larger writes). Buffer and window tuning will not help.",
		rcv, snd, rcv, rcv, dur(in.PeerThinkMean), dur(peer), of, rcv, snd)
	return summary, fix
}

// lossText explains a loss-limited flow, naming timeout stalls and a
// receiver that stopped answering, with the fix each needs.
func lossText(v Verdict, in Info, rtt, snd, rcv string) (summary, fix string) {
	segs := fmt.Sprintf("%d segments", in.Retrans)
	if in.RetransFast+in.RetransRTO+in.RetransProbe > 0 {
		segs += fmt.Sprintf(": %d fast, %d after a timeout", in.RetransFast, in.RetransRTO)
		if in.RetransProbe > 0 {
			segs += fmt.Sprintf(", %d tail loss probe(s)", in.RetransProbe)
		}
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
	if in.Retrans == 0 {
		// Recovering from losses before the judged part (a live socket's
		// interval): "0 segments, at this much loss" would contradict
		// itself.
		summary = fmt.Sprintf("the sender spent %s of %s recovering from losses before it, or growing its window back after them; nothing was retransmitted in it",
			pct(v.Share), orWord(in.Scope, "the time"))
		fix = "the path lost packets before this and the congestion window is still growing back: judge a longer stretch (flows --watch, a longer test) to see how often it loses, and find the loss (interface errors, a policer, Wi-Fi, a full queue)."
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
