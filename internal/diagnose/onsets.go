package diagnose

import (
	"fmt"
	"time"
)

// Onsets tallies a flow's loss recoveries by the queue before each, as a
// capture at the sender sees them (analyze): the round trip over the
// round trip or two before a recovery began shows the queue the flow had
// built when it lost.
//
// A recovery that began at a standing queue (AtQueue: at least
// shallowRise of the round trip and queueMin) is the bottleneck's queue
// overflowing, as a loss-based congestion control makes any queue do:
// slow start's overshoot, cubic's probe at the top of its cycle. How the
// others came (one segment at a time, or in bursts) tells random loss
// from a queue too small for a window's burst: the averages over every
// recovery mix the two (measured: 50 ms x 100 Mbit/s, 0.01% random loss,
// cubic at 86 of 94 Mbit/s lost 43 segments in slow start's overshoot at
// a 48 ms queue and 1 segment in each of three more recoveries, 11.5 a
// time on average: named a shallow buffer by the averages).
type Onsets struct {
	AtQueue int
	// Low counts the recoveries that began with no such queue, LowLost
	// the segments they repaired.
	Low     int
	LowLost int64
	// Under counts those of AtQueue that began with the queue under half
	// the highest an earlier recovery began at (UnderLost their
	// segments): a drop-tail queue drops only when full, so the queue
	// did not lose them (random loss while the queue drained after a
	// cut; measured: 50 ms x 100 Mbit/s, 0.01% random loss, a 1-BDP
	// queue: slow start lost at +50 ms, then single segments at +23,
	// +5.4 and +0.9 ms).
	Under     int
	UnderLost int64
	top       time.Duration
}

// Add tallies one recovery: it repaired lost segments, after a queue
// delay of queue (the round trip's rise over its least, rtt).
func (o *Onsets) Add(lost int64, queue, rtt time.Duration) {
	if queue >= queueMin && queue.Seconds() >= shallowRise*rtt.Seconds() {
		o.AtQueue++
		if queue < o.top/2 {
			o.Under++
			o.UnderLost += lost
		}
		o.top = max(o.top, queue)
		return
	}
	o.Low++
	o.LowLost += lost
}

// filled: every recovery began at the top of a standing queue, so the
// flow filled the bottleneck's queue before each loss, as a flow that
// filled the path does (LossEvidence.FilledPath), whatever the verdict
// its losses earned it. Measured: 50 ms x 100 Mbit/s with the
// emulator's one-BDP queue, cubic's slow start overshot (HyStart did not
// end it) and lost 3.2% of the segments at the queue's top; the flow,
// judged loss-limited, stood at a 31.8 ms median queue and analyze named
// bufferbloat on the clean path.
//
// The buffer held that queue before it lost, so it is not shallow either,
// whatever the median queue (an ordinary bottleneck's, or random loss the
// queue hid): LossCause names no shallow buffer then. Measured: flows on
// 50 ms x 100 Mbit/s with 0.01% random loss and a one-BDP queue named a
// shallow buffer in 2 of 10 runs from 1 or 2 single-segment losses at a
// 5+ ms queue, the median queue 2.8-4.4 ms; a true shallow buffer
// (0.05 BDP) never holds shallowRise.
func (o *Onsets) filled() bool {
	return o != nil && o.AtQueue > 0 && o.Under == 0 && o.Low == 0
}

// minUnderTop is the fewest recoveries under the queue's top (Under and
// Low) that name random loss at a standing queue (underTop).
const minUnderTop = 2

// underTop: at a standing queue, recoveries that began well under the
// queue's top, a segment or two each: losses the queue did not make.
// It returns how they came.
func underTop(e LossEvidence) (string, bool) {
	o := e.Onsets
	if o == nil || e.Reordered {
		return "", false
	}
	n, lost := o.Under+o.Low, o.UnderLost+o.LowLost
	if n < minUnderTop || lost > 2*int64(n) {
		return "", false
	}
	return fmt.Sprintf("%d segments in %d of %d loss events that began with the queue under half its top, or none (a drop-tail queue drops only when full), "+
		"besides %d at the top of a standing queue (the bottleneck's own, overflowing)", lost, n, o.AtQueue+o.Low, o.AtQueue-o.Under), true
}

// numbers adds the tally to a cause's numbers.
func (o Onsets) numbers(nums map[string]float64) {
	nums["losses_at_queue"] = float64(o.AtQueue)
	nums["losses_no_queue"] = float64(o.Low)
	nums["losses_under_top"] = float64(o.Under)
}

// offQueue is e with its loss rate cut to the segments of the recoveries
// the queue did not make (Low and Under), when some began at the top of
// a standing queue: pacing is judged against those. Slow start's
// overshoot of a full queue can lose most of a flow's segments; a paced
// run, which never overshoots, losing far fewer says nothing of the
// others (measured: 50 ms x 100 Mbit/s, 0.01% random loss, a 1-BDP
// queue: 379 of 382 segments lost in slow start's three recoveries at a
// 27-51 ms queue, then one at 22 and one at 10 ms; paced at 70 Mbit/s
// the download lost 0.013%, "cured" against the 1.3% of all of them,
// and test named a shallow buffer).
// Recoveries at the top that repaired a segment or two each are left in
// (random loss strikes there too); bursts are the queue's.
func offQueue(e LossEvidence) LossEvidence {
	o := e.Onsets
	if o == nil || e.Lost <= 0 {
		return e
	}
	off := o.LowLost + o.UnderLost
	if top, n := e.Lost-off, int64(o.AtQueue-o.Under); n <= 0 || top <= 2*n {
		return e
	}
	e.LossRate *= float64(off) / float64(e.Lost)
	return e
}
