package tcpflow

import (
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// captureLimited says why a direction cannot be judged, or "".
func (f *Flow) captureLimited(a *Analyzer, d, p *direction, in diagnose.Info) string {
	switch {
	case d.segs > 0 && d.lastAckT == 0 && d.rttN == 0:
		return "the capture holds only one direction of the flow (no ACKs for this data): capture on a host or port that sees both directions"
	case payloadOnly(d, p) && d.turns == 0 && p.turns == 0:
		return noPureAcks
	case d.missed > 0 && d.missed*4 > d.sndMax:
		return fmt.Sprintf("the capture missed %d of %d bytes acknowledged (packets dropped by the capture, or another path): capture with a larger buffer (tcpdump -B) and a smaller snaplen (-s 128)", d.missed, d.sndMax)
	}
	return ""
}

const noPureAcks = "the capture holds no ACK without payload from the receiver (it looks filtered to segments with data): when the data was acknowledged, and so the RTT and the flight, cannot be known; capture without a payload filter"

// payloadOnly: the receiver's ACKs in the capture all carry data.
func payloadOnly(d, p *direction) bool { return d.segs >= 10 && d.pureAcks == 0 && p.segs > 0 }

// judgeable reports what the capture proves when its clock is coarse or
// no RTT was measured: a verdict that rests on long stretches (a window
// closed for seconds, a sender idle) stands, with the caveat as a flag;
// only a verdict that needs what the capture lacks becomes
// capture-limited.
func (f *Flow) judgeable(a *Analyzer, d *direction, in diagnose.Info, v diagnose.Verdict) diagnose.Verdict {
	tick := a.clock.tick()
	coarse := tick > 0 && (in.RTT == 0 || tick*2 > in.RTT)
	noRTT := in.RTT == 0 && d.tl.Total() > 0
	filtered := slices.Contains(in.Flags, diagnose.FlagPayloadOnly)
	if !coarse && !noRTT && !filtered {
		return v
	}
	timeless := v.Verdict == diagnose.ZeroWindow || v.Verdict == diagnose.AppLimited
	long := tick == 0 || time.Duration(v.Share*float64(d.tl.Total())) >= 10*tick
	if timeless && long {
		if noRTT {
			v.Flags = append(v.Flags, diagnose.FlagNoRTT)
		}
		return v
	}
	why := "no RTT could be measured (no handshake and no acknowledged data timed)"
	switch {
	case filtered:
		why = noPureAcks
	case coarse && !noRTT:
		why = fmt.Sprintf("the capture clock ticks every %s, more than half the RTT (%s): times in it cannot be trusted; capture with a finer clock (tcpdump --time-stamp-precision=nano)", dur(tick), dur(in.RTT))
	}
	in.CaptureLimited = why
	return diagnose.Diagnose(&d.tl, in)
}

func dur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/1e6)
}
