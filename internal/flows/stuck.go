package flows

import (
	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/units"
)

// caLoss is tcp_info's TCP_CA_Loss: the sender is recovering from a
// retransmission timeout.
const caLoss = 4

// blackHoleRTOs is how many timeouts in a row on the same head segment,
// with data after it SACKed, name a PMTU black hole: random loss drops
// one resend in a thousand or so, not three in a row while the segments
// after it arrive, and an outage or a peer gone SACKs nothing.
const blackHoleRTOs = 3

// stuckOnBlackHole: a socket whose head segment the timer resent
// blackHoleRTOs times or more in a row, unanswered, while the receiver
// SACKed data after it: smaller segments got through (a message's tail),
// the full-size one does not (measured: a 1400-byte link dropping larger
// packets without ICMP, longhaul test's control connection: its session
// answer's full-size segments resent by the timer for 10 s, the tail
// SACKed).
func stuckOnBlackHole(s Sock) bool {
	return s.CAState == caLoss && s.RTOs >= blackHoleRTOs && s.SackedBytes > 0 && s.MSS > 0
}

// stuck judges a sending socket that moved nothing over the interval
// because its head segment never arrives (stuckOnBlackHole).
func stuck(f Flow, s Sock, scope string) Flow {
	f.Direction = DirSend
	var none diagnose.Timeline
	v := diagnose.Diagnose(&none, diagnose.Info{Sender: "this host", RTT: s.RTT, Duration: units.FromSeconds(f.Interval), Scope: scope,
		Socket: &diagnose.Socket{Stuck: true, RTOs: s.RTOs, Outstanding: s.Inflight + s.SackedBytes}})
	c := diagnose.BlackHoleStuck(s.MSS, s.SackedBytes, s.RTOs, "this host")
	j := diagnose.PathCause(v, diagnose.PathEvidence{BlackHole: &c})
	f.Verdict, f.Cause = j.Verdict, j.Cause
	return f
}
