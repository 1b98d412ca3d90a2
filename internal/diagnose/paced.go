package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// PacedRun is a single-stream download the sender paced at a rate.
type PacedRun struct {
	RateBps  float64 // the pace
	Bps      float64 // what it carried
	LossRate float64 // the share of its segments retransmitted
	// LoadedRTT is the round trip while it ran, near its top (test uses
	// the 90th percentile: a drop-tail queue overrun by a pace above the
	// link fills before each loss); 0 unknown.
	LoadedRTT time.Duration
}

// DatagramRun is datagrams paced above the most a download carried,
// which do not back off after a loss: a queue at that ceiling stands full
// under them for the whole run, a policer drops their excess and queues
// nothing.
type DatagramRun struct {
	RateBps  float64       // the pace
	Bps      float64       // the rate they arrived at, once the queue (or the bucket) settled
	LossRate float64       // the share of them lost
	Queue    time.Duration // the standing queue they found above the least delay of the run
}

// ceilingQueued: a queue stood at the path's ceiling. The datagrams say
// it when they ran (a queue stood under them, or they arrived at their
// pace: nothing drops at that rate); else bbr's run (otherQueued).
// Measured (lab causes, 50 ms x 100 Mbit/s): the pings of bbr's run over
// a 21-packet queue (2.5 ms) rose +0.20 ms in their median in 2 of 10
// runs, as at a policer.
func ceilingQueued(e LossEvidence) bool {
	if r := e.Datagrams; r != nil {
		return standing(e, r.Queue) || (r.Bps >= paceHeld*r.RateBps && r.LossRate < minDatagramLoss)
	}
	return otherQueued(e)
}

// droppedUnqueued: the datagrams, paced above the ceiling, lost what
// exceeded it and found no queue standing: the policer's mark, in the
// kernel's receive times. It stands over the pings, which run through
// both ends' processes on the control connection: on a loaded 2-core VM
// with stalls their median rose 1.2 ms and a paced run's 90th percentile
// 1.6 ms at a policer whose datagrams found 0.30-0.39 ms (lab causes,
// 2026-11-27: 2 of 4 runs named a shallow buffer).
func droppedUnqueued(e LossEvidence) bool {
	r := e.Datagrams
	return r != nil && !standing(e, r.Queue) && r.LossRate >= minDatagramLoss
}

// unqueued: no queue stood at a loaded RTT, or the datagrams say none
// stands at the ceiling (droppedUnqueued), whatever the pings say.
func unqueued(e LossEvidence, loaded time.Duration) bool {
	return !queued(e, loaded) || droppedUnqueued(e)
}

// minDatagramLoss: datagrams paced above a ceiling lose what exceeds it
// (a fifth at udpAbove's 1.25); under this share they met none.
const minDatagramLoss = 0.01

// Paced runs against the unpaced flow: a run carried its pace when it
// reached paceHeld of it (and lost no more than a quarter of the unpaced
// flow's share: pacing removed the bursts that were lost); a run fell
// short when it carried under paceShort of its pace.
const (
	paceHeld  = 0.9
	paceShort = 0.85
)

// pacedVerdict reads the paced runs of a flow that lost in bursts: cured
// (every run paced at or below the most any download carried held its
// pace: the losses were bursts, which pacing removes; a run paced above
// that is expected to fall short), or a ceiling, the most any run
// carried (a run fell short of its pace, losing, with no queue in it nor
// while the other congestion control ran at the ceiling: something
// drops what exceeds a rate even when it comes evenly). Neither when
// there are no runs or they say neither.
func pacedVerdict(e LossEvidence) (cured bool, ceiling float64) {
	if len(e.Paced) == 0 || e.Reordered {
		return false, 0
	}
	best := max(e.Bps, e.BestOtherBps)
	for _, r := range e.Paced {
		best = max(best, r.Bps)
	}
	cured, under, short := true, 0, false
	for _, r := range e.Paced {
		if r.RateBps <= best {
			under++
			if r.Bps < paceHeld*r.RateBps || r.LossRate > e.LossRate/4 {
				cured = false
			}
		}
		// Short of its pace, losing, and no queue: a queue would be a
		// bottleneck's (its rate the best carried), not a policer's.
		if r.Bps < paceShort*r.RateBps && r.LossRate > 0 && unqueued(e, r.LoadedRTT) {
			short = true
		}
	}
	if short && !ceilingQueued(e) {
		return false, best
	}
	return cured && under > 0, 0
}

// heldUnder: a paced run at or under the ceiling carried its pace and
// lost at most a quarter of the unpaced flow's rate.
func heldUnder(e LossEvidence, ceiling float64) bool {
	for _, r := range e.Paced {
		if r.RateBps <= ceiling && r.Bps >= paceHeld*r.RateBps && r.LossRate <= e.LossRate/4 {
			return true
		}
	}
	return false
}

// pacedRandom: the paced runs lost at rates the path carries otherwise.
// Every run paced under paceShort of the most the other congestion
// control or several streams carried lost segments with no queue in it,
// and either fell short of its pace where hidden (the flow's own
// standing queue may have hidden random loss: an unpaced cubic flow
// fills a deep buffer between losses; measured: 0.01% on 50 ms x
// 100 Mbit/s, paced at 70 Mbit/s the download carried 40 while bbr
// carried 93.8, and the unpaced one 71.2 over the queue of the 1-BDP
// link it filled between losses), or lost on a deep buffer (deepBuffer),
// kept pace or not. A queue's losses come with the queue; a policer's
// paced runs may fall short under its rate too (a 64 KB bucket loses a
// paced flow's GSO bursts), but its unpaced flow stands no queue and its
// datagrams find none; a shallow buffer loses a paced flow's GSO bursts
// too, and its datagrams find a queue of a few milliseconds. It returns
// the lowest such run.
func pacedRandom(e LossEvidence, hidden bool) (PacedRun, bool) {
	other := max(e.BestOtherBps, e.ManyBps)
	if other <= 0 || e.Reordered {
		return PacedRun{}, false
	}
	deep := deepBuffer(e)
	var low PacedRun
	for _, r := range e.Paced {
		if r.RateBps > paceShort*other {
			continue
		}
		short := r.Bps < paceShort*r.RateBps
		if r.LossRate <= 0 || queued(e, r.LoadedRTT) || !(deep || short && hidden) {
			return PacedRun{}, false
		}
		if low.RateBps == 0 || r.RateBps < low.RateBps {
			low = r
		}
	}
	return low, low.RateBps > 0
}

// deepBuffer: the datagrams, paced above the ceiling, found a standing
// queue of a quarter of the RTT or more, and at least four 64 KB bursts
// (a GSO super-packet) at the rate they arrived at: a buffer that holds a
// paced flow's bursts, which a paced run under the path's rate never
// fills. Measured (lab causes, 50 ms x 100 Mbit/s): 48-49 ms under 1-BDP
// buffers (clean, random loss, reordering, a shared link), 1-4 ms on the
// shallow buffer (0.05 BDP), none at a policer. Paced at 0.75x there, 60
// runs of 0.01% random loss (50 and 100 ms) lost 1-10 segments in all but
// one; 30 clean, bufferbloat and shared-link runs none.
func deepBuffer(e LossEvidence) bool {
	r := e.Datagrams
	if r == nil || r.Bps <= 0 {
		return false
	}
	bursts := time.Duration(4 * 65536 * 8 / r.Bps * float64(time.Second))
	return r.Queue >= max(e.MinRTT/4, bursts)
}

// pacedWords says what the paced runs carried and lost.
func pacedWords(rs []PacedRun) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("at %s carried %s, losing %.2g%%", units.FormatRate(r.RateBps), units.FormatRate(r.Bps), 100*r.LossRate))
	}
	return strings.Join(parts, "; ")
}

// RandomLossSeen names the random loss the paced runs showed (pacedRandom)
// on a path whose flow it did not hold: the flow reached the path's rate
// (measured: 0.01% on 50 ms x 100 Mbit/s, the download at 91.4 of
// 91.9 Mbit/s while paced at 70.5 it carried 26.2). It is seen, not the
// flow's cause: a longer or faster path, or a smaller window, would be
// held by it.
func RandomLossSeen(e LossEvidence) (Cause, bool) {
	low, ok := pacedRandom(e, true)
	if !ok || e.MinRTT <= 0 {
		return Cause{}, false
	}
	mathis := pathmodel.MathisBps(max(e.MSS, 536), e.MinRTT, low.LossRate)
	return Cause{Name: CauseRandomLoss, Numbers: map[string]float64{"paced_bps": low.RateBps, "paced_carried_bps": low.Bps, "loss_rate": low.LossRate,
		"min_rtt_s": e.MinRTT.Seconds(), "mathis_bps": mathis, "throughput_bps": e.Bps},
		Text: fmt.Sprintf("random loss: %s: "+
			"the path loses segments whatever the rate; it did not hold this flow (%s), but a loss-based congestion control on a longer or faster path would stay near the Mathis bound (%s at that loss rate and this RTT)",
			pacedRandomWords(e, low), units.FormatRate(e.Bps), units.FormatRate(mathis)),
		Fix: randomFixes(orWord(e.Sender, "the sender"), useBBR(e.CC))}, true
}

// pacedRandomWords says what pacedRandom's run showed.
func pacedRandomWords(e LossEvidence, low PacedRun) string {
	w := fmt.Sprintf("paced at %s, under what the path carried otherwise (%s), the same download carried %s, losing %.2g%% with no queue",
		units.FormatRate(low.RateBps), units.FormatRate(max(e.BestOtherBps, e.ManyBps)), units.FormatRate(low.Bps), 100*low.LossRate)
	if deepBuffer(e) {
		w += fmt.Sprintf(", on a buffer that held a %s queue under datagrams paced above the path's rate (not a shallow one, not a policer)",
			units.FormatDuration(e.Datagrams.Queue.Round(100*time.Microsecond)))
	}
	return w
}
