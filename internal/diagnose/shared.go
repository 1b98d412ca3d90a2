package diagnose

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// sharedShare: a flow that carried less than this share of what the path
// carried on several streams, while a queue of at least shallowRise of
// the round trip stood, shares the bottleneck with other traffic. Alone
// at a bottleneck one loss-based flow fills it (measured on 50 ms x 100
// Mbit/s, a one-BDP queue: 94 of 94 Mbit/s on one stream and on 8); next
// to one other cubic download it gets about half, and 8 streams about
// 8/9.
const sharedShare = 0.7

// sharedCause names a shared bottleneck: the flow held at a standing
// queue (the bottleneck's: it filled) far below what several streams
// carried on the same path. Random loss, a policer or a shallow buffer
// hold one stream below several too, but with no queue standing to the
// end: random loss on a one-BDP drop-tail queue filled it in slow start
// and then held the flow under it (measured on 50 ms x 100 Mbit/s, 0.01%:
// the pings' median +5.7 ms over the whole download, +0.3 ms over its
// second half, at 67% of 8 streams' rate), while another user's download
// kept +9 to +24 ms to the end (12 runs on both lab shapes).
func sharedCause(e LossEvidence, q time.Duration, nums map[string]float64, sender string) (Cause, bool) {
	if e.ManyBps <= 0 || e.Bps <= 0 || e.Bps >= sharedShare*e.ManyBps || e.Reordered {
		return Cause{}, false
	}
	var stood string
	switch {
	case sharedQueue(e, e.LoadedRTT) && (e.SteadyRTT <= 0 || sharedQueue(e, e.SteadyRTT)):
		stood = fmt.Sprintf("the round trip %s, +%s under load", units.FormatDuration(e.MinRTT.Round(100*time.Microsecond)), units.FormatDuration(q.Round(100*time.Microsecond)))
	case flowQueued(e):
		// The pings' own reference stood in the other traffic's queue
		// (measured on 50 ms x 100 Mbit/s beside a cubic download: idle
		// pings 85.7-93.8 ms, loaded 89.0: +3.4 ms; the flow's smoothed
		// RTT against its least, +35 ms).
		q = e.FlowRTT - e.MinRTT
		nums["flow_rtt_s"], nums["queue_delay_s"] = e.FlowRTT.Seconds(), q.Seconds()
		stood = fmt.Sprintf("the flow's round trip %s against the path's least %s, before it started too",
			units.FormatDuration(e.FlowRTT.Round(100*time.Microsecond)), units.FormatDuration(e.MinRTT.Round(100*time.Microsecond)))
	default:
		return Cause{}, false
	}
	share := e.Bps / e.ManyBps
	nums["many_bps"], nums["share"] = e.ManyBps, share
	c := Cause{Name: CauseSharedBottleneck, Numbers: nums,
		Text: fmt.Sprintf("a shared bottleneck: this flow carried %s while the same path carried %s on several streams (its share %.0f%%), with a queue standing (%s): "+
			"other traffic shares the bottleneck, and a loss-based flow gets about its share of it, not the link",
			units.FormatRate(e.Bps), units.FormatRate(e.ManyBps), 100*share, stood)}
	c.Fix = append(c.Fix,
		ActorNetwork+": the bottleneck is shared: its operator can give this traffic its own share (QoS, a scheduled window for bulk transfers) or more capacity",
		ActorSender+": "+sender+" can take a larger share with parallel streams ("+units.FormatRate(e.ManyBps)+" on several here), at the other traffic's expense")
	return c, true
}

// sharedQueue: at a round trip of loaded, a queue stood (queued) of at
// least shallowRise of the RTT.
func sharedQueue(e LossEvidence, loaded time.Duration) bool {
	return queued(e, loaded) && queueDelay(e, loaded).Seconds() >= shallowRise*e.MinRTT.Seconds()
}

// flowQueued: the flow's own smoothed round trip over its later half
// stood a queue (sharedQueue) above the path's least, both the
// kernel's: another user's queue that the idle pings stood in too, when
// the idle pings already stood well above the least (queueRise of it).
func flowQueued(e LossEvidence) bool {
	if e.FlowRTT <= 0 || e.IdleRTT <= 0 || !standing(e, e.IdleRTT-e.MinRTT) {
		return false
	}
	base := e
	base.IdleRTT = e.MinRTT
	return sharedQueue(base, e.FlowRTT)
}
