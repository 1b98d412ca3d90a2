package diagnose

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// Ramp is how a flow's delivery rate moved over the part a producer
// judged (a test's phase: its second half), split in two halves of
// time: a flow that still sped up from the first to the second, losing
// nothing, had not reached any limit yet.
type Ramp struct {
	EarlyBps, LateBps float64
	// Retrans: segments retransmitted since the flow began (a flow that
	// lost has found a limit, whatever its rate did after).
	Retrans int64
	// Sending is how long the flow had been sending when the judged part
	// ended, RTT the path's round trip: Rounds says how many it had.
	Sending, RTT time.Duration
	// Cut says why the phase was as short as it was, when the producer
	// shortened it (a prober's deadline); "" when the user chose it.
	Cut string
}

// RampGrowth is the speed-up from the first half of the judged part to
// the second that makes a flow still ramping: a flow held by a window
// or the path delivers about the same in both (measured: a 4 MiB send
// buffer at 170 ms x 1 Gbit/s, 1.00-1.02 over a 10 s phase's second
// half; the same path cut to 2 s, 1.77, still in BBR's startup), and
// BBR's gain cycle averages out over a few round trips.
const RampGrowth = 1.25

// Ramping: the flow still sped up by RampGrowth over the judged part,
// losing nothing. What the windows said over such a part is slow start,
// not a limit reached.
func (r Ramp) Ramping() bool {
	return r.Retrans == 0 && r.EarlyBps > 0 && r.LateBps >= RampGrowth*r.EarlyBps
}

// Rounds is how many round trips the flow had been sending.
func (r Ramp) Rounds() float64 {
	if r.RTT <= 0 {
		return 0
	}
	return r.Sending.Seconds() / r.RTT.Seconds()
}

// rampText is the summary and fix of a flow cut off while ramping.
func rampText(r Ramp) (summary, fix string) {
	summary = fmt.Sprintf("the flow was still speeding up when it was judged: %s, then %s, nothing lost (%.0f round trips of %s after it started sending): slow start, no limit reached yet",
		units.FormatRate(r.EarlyBps), units.FormatRate(r.LateBps), r.Rounds(), units.FormatDuration(r.RTT.Round(100*time.Microsecond)))
	fix = "measure longer: slow start to a long fat path's rate takes about log2(BDP / initial window) round trips, and the steady part as many again"
	if r.Cut != "" {
		summary += "; " + r.Cut
		fix += " (give the probe more time: --probe-timeout and the scrape's timeout)"
	}
	return summary, fix
}
