package diagnose

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// Thresholds of bufferbloat.
const (
	// bloatRise: a queue delay of at least this share of the RTT (and
	// bloatMin) under load is a deep queue filling; bloatFilled of it
	// for a flow that filled the path (LossEvidence.FilledPath): a
	// one-BDP queue, full, doubles the round trip, and the samples of a
	// full one run a little over (delayed ACKs, and on a path that
	// reorders the late segments': measured on 50 ms x 100 Mbit/s with
	// 5% held 30 ms, +1.02 and +1.16 RTT; an 8-BDP queue +1.5 to +4.4,
	// and since as little as +1.05: bloatTop).
	bloatRise   = 0.5
	bloatFilled = 1.25
	bloatMin    = 20 * time.Millisecond
	// bloatTop: a queue delay near its top (LossEvidence.TopRTT) of at
	// least this share of the RTT is more than one BDP of queue, with a
	// median under bloatFilled (but over bloatRise: a standing queue): a
	// one-BDP queue, full, adds one RTT. Measured with
	// analyze on the lab's captures (both shapes, every case, 2,400
	// flows): at most +1.07 RTT on paths with a one-BDP queue, +1.47 on
	// one that reorders (its late segments' samples; not asked there); on
	// an 8-BDP queue +2.8 to +7.3, while cubic's median after an early
	// exit from slow start was +1.05 to +1.35 (under bloatFilled in CI).
	bloatTop = 1.5
)

// bloated reports whether the queue delay q (the median's) under load,
// or near its top, is bufferbloat, and which of the two to report.
func bloated(e LossEvidence, q time.Duration) (time.Duration, bool) {
	rise := bloatRise
	if e.FilledPath || e.Onsets.filled() {
		rise = bloatFilled
	}
	rtt := e.MinRTT.Seconds()
	switch {
	case q < bloatMin:
		return 0, false
	case q.Seconds() >= rise*rtt:
		return q, true
	case e.TopRTT > 0 && !e.Reordered && q.Seconds() >= bloatRise*rtt:
		// A standing queue (its median over half the RTT) that near its
		// top held more than one BDP: bufferbloat, whoever filled it.
		if top := queueDelay(e, e.TopRTT); top.Seconds() >= bloatTop*rtt {
			return top, true
		}
	}
	return 0, false
}

// bloatCause names bufferbloat: a queue delay of q under load (the
// median's, or near its top: bloatTop).
func bloatCause(e LossEvidence, q time.Duration, nums map[string]float64, sender, bbr string) Cause {
	nums["queue_bytes"] = q.Seconds() * e.Bps / 8
	top := ""
	if e.TopRTT > e.LoadedRTT {
		top = " (" + units.FormatDuration(e.TopRTT.Round(100*time.Microsecond)) + " near its top)"
	}
	c := Cause{Name: CauseBufferbloat, Numbers: nums,
		Text: fmt.Sprintf("bufferbloat: the round trip rose from %s to %s under load%s: a queue of about %s fills on the path",
			units.FormatDuration(e.MinRTT.Round(100*time.Microsecond)), units.FormatDuration(e.LoadedRTT.Round(100*time.Microsecond)), top, units.FormatBytes(nums["queue_bytes"]))}
	c.Fix = append(c.Fix, ActorNetwork+": manage the bottleneck's queue (fq_codel or cake, or a queue of about one BDP, not more)")
	if bbr != "" {
		c.Fix = append(c.Fix, ActorSender+": "+sender+" can "+bbr+": it keeps the queue short")
	}
	return c
}
