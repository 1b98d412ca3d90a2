package diagnose

import "time"

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
}

// Add tallies one recovery: it repaired lost segments, after a queue
// delay of queue (the round trip's rise over its least, rtt).
func (o *Onsets) Add(lost int64, queue, rtt time.Duration) {
	if queue >= queueMin && queue.Seconds() >= shallowRise*rtt.Seconds() {
		o.AtQueue++
		return
	}
	o.Low++
	o.LowLost += lost
}

// numbers adds the tally to a cause's numbers.
func (o Onsets) numbers(nums map[string]float64) {
	nums["losses_at_queue"] = float64(o.AtQueue)
	nums["losses_no_queue"] = float64(o.Low)
}
