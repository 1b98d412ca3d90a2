package tcpflow

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// captureLimited says why a direction cannot be judged, or "".
func (f *Flow) captureLimited(a *Analyzer, d, p *direction, in diagnose.Info) string {
	switch {
	case d.segs > 0 && d.lastAckT == 0 && d.rttN == 0:
		return "the capture holds only one direction of the flow (no ACKs for this data): capture on a host or port that sees both directions"
	case payloadOnly(d, p) && d.turns == 0 && p.turns == 0:
		return diagnose.NoPureAcks
	case d.missed > 0 && d.missed*4 > d.sndMax:
		return fmt.Sprintf("the capture missed %d of %d bytes acknowledged (packets dropped by the capture, or another path): capture with a larger buffer (tcpdump -B) and a smaller snaplen (-s 128)", d.missed, d.sndMax)
	}
	return ""
}

// payloadOnly: the receiver's ACKs in the capture all carry data.
func payloadOnly(d, p *direction) bool { return d.segs >= 10 && d.pureAcks == 0 && p.segs > 0 }
