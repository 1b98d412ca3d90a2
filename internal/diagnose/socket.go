package diagnose

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/units"
)

// Vantages (Info.Vantage): where the evidence was taken. What a verdict
// can say depends on it.
const (
	// VantageSender: the sending host's socket, or a capture that sees
	// the sender's data and the ACKs coming back to it (the default).
	VantageSender = ""
	// VantageReceiver: the receiving host's socket (tcp_info of a
	// socket that receives): the sender's window and losses are not
	// seen, so it judges nothing but says where to look.
	VantageReceiver = "receiver"
)

// Socket is what a live socket (tcp_info) tells beyond the counters a
// capture also has: the congestion window now, and a head segment the
// retransmission timer resends unanswered while later data is SACKed.
type Socket struct {
	Cwnd, Ssthresh int64 // bytes; Ssthresh 0: no loss yet (first slow start)
	RcvSpace       int64 // the receive buffer space, for a receiving socket
	// Stuck: the head segment was resent by the timer RTOs times in a row
	// and nothing moved, with Outstanding bytes sent (SACKed ones
	// included): a black hole's signature (BlackHoleStuck).
	Stuck       bool
	RTOs        int64
	Outstanding int64
}

// socketVerdict judges what needs no timeline: a receiving socket, and a
// sending one stuck on a segment that never arrives. ok false: judge the
// timeline.
func socketVerdict(v *Verdict, in Info) bool {
	s := in.Socket
	switch {
	case in.Vantage == VantageReceiver:
		v.Verdict = Unknown
		v.Summary = "this host receives (receive buffer space " + bytesIn(socketOr(s).RcvSpace) + "): what limits the flow is measured at the sender"
		v.Fix = "run longhaul flows on the sender " + in.Sender + ", or capture the transfer and run longhaul analyze on it"
		return true
	case s != nil && s.Stuck:
		v.Verdict, v.Share = LossLimited, 1
		v.Flags = appendFlag(v.Flags, FlagRTOStall)
		v.Shares = map[string]float64{StateLoss.String(): 1}
		v.Summary = fmt.Sprintf("stalled: nothing acknowledged in %s with %s outstanding, the timer resending the head of the data (%d times in a row)",
			dur(in.Duration), units.FormatBytes(float64(s.Outstanding)), s.RTOs)
		v.Fix = "the head of the data never arrives: see the cause"
		return true
	}
	return false
}

func socketOr(s *Socket) Socket {
	if s == nil {
		return Socket{}
	}
	return *s
}

// liveSlowStart is the summary and fix of a live socket in slow start: a
// capture sees the whole transfer and counts its rounds; a live socket
// is only known to be in slow start now.
func liveSlowStart(share string, s Socket, in Info) (summary, fix string) {
	summary = fmt.Sprintf("%s the sender was in slow start (cwnd %s, below ssthresh)", share, bytesIn(s.Cwnd))
	if s.Ssthresh == 0 {
		summary = fmt.Sprintf("%s the sender was in its first slow start (cwnd %s, no loss yet)", share, bytesIn(s.Cwnd))
	}
	fix = "the flow is still growing its congestion window, one doubling per round trip of " + units.FormatDuration(in.RTT) +
		"; watch it longer (--watch). If its transfers are short, reuse connections and raise the initial windows " +
		"(ip route change ... initcwnd 20 initrwnd 20) and set net.ipv4.tcp_slow_start_after_idle=0 on " + orWord(in.Sender, "the sender") + "."
	return summary, fix
}
