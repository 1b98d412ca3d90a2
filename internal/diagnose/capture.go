package diagnose

import (
	"fmt"
	"slices"
	"time"
)

// NoPureAcks is why a capture filtered to segments with data cannot be
// timed: when the data was acknowledged, and so the RTT and the flight,
// cannot be known.
const NoPureAcks = "the capture holds no ACK without payload from the receiver (it looks filtered to segments with data): when the data was acknowledged, and so the RTT and the flight, cannot be known; capture without a payload filter"

// untimed is why a capture's times cannot carry verdict v, or "": its
// clock ticks coarser than half the RTT, no RTT was measured, or it
// holds no pure ACK (FlagPayloadOnly). A verdict that rests on long
// stretches (a window closed for seconds, a sender idle: ten ticks or
// more) stands, with FlagNoRTT when no RTT was measured; only one that
// needs what the capture lacks is capture-limited.
func untimed(v *Verdict, tl *Timeline, in Info) string {
	tick := in.ClockTick
	coarse := tick > 0 && (in.RTT == 0 || tick*2 > in.RTT)
	noRTT := in.RTT == 0 && tl.Total() > 0
	filtered := slices.Contains(in.Flags, FlagPayloadOnly)
	if !in.Capture || (!coarse && !noRTT && !filtered) {
		return ""
	}
	timeless := v.Verdict == ZeroWindow || v.Verdict == AppLimited
	if long := tick == 0 || time.Duration(v.Share*float64(tl.Total())) >= 10*tick; timeless && long {
		if noRTT {
			v.Flags = appendFlag(v.Flags, FlagNoRTT)
		}
		return ""
	}
	switch {
	case filtered:
		return NoPureAcks
	case coarse && !noRTT:
		return fmt.Sprintf("the capture clock ticks every %s, more than half the RTT (%s): times in it cannot be trusted; capture with a finer clock (tcpdump --time-stamp-precision=nano)", tickWords(tick), tickWords(in.RTT))
	}
	return "no RTT could be measured (no handshake and no acknowledged data timed)"
}

func tickWords(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/1e6)
}
