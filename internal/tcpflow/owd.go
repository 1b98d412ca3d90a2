package tcpflow

import (
	"math"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// owdTrack follows a direction's one-way delay from the sender's TCP
// timestamps: each new data segment's time at the capture less its
// TSval, in the sender's clock. Its rise over its least is the queue on
// the path between the sender and the capture point, which a capture
// away from the sender (at the receiver) never sees in its own
// data-to-ACK times (the receiver's ACK delays). Only differences count:
// the two clocks' offset cancels.
type owdTrack struct {
	t0, ts0 int64   // the first sample: capture time (ns) and TSval
	nsPerTS float64 // the sender's timestamp tick in ns; 0 not yet known, < 0 unusable
	early   [][2]int64
	min     int64 // the least one-way delay so far (relative, ns)
	// peaks holds the most one-way delay of each owdBucket of time, the
	// last len(peaks) of them: [start, delay].
	peaks [16][2]int64
	kept  []int64 // one-way delays kept for the quantiles, every step-th
	step  int64
	n     int64
}

// Sender timestamp clocks: Linux's 1 kHz (and µs with tcp_usec_ts),
// 250 and 100 Hz stacks, BSD's 1 kHz.
var tsClocks = []float64{1e6, 1e3, 4e6, 1e7}

const (
	owdEarly    = 256   // samples kept until the clock is known
	owdKept     = 1024  // samples kept for the quantiles
	owdClockMin = 100e6 // ns of capture before the clock is judged
	owdBucket   = 50e6  // ns of each peak kept (16 of them: 0.8 s)
)

// add notes a new data segment seen at t (ns) carrying tsval.
func (o *owdTrack) add(t int64, tsval uint32) {
	switch {
	case o.nsPerTS < 0:
		return
	case o.n == 0 && len(o.early) == 0:
		o.t0, o.ts0 = t, int64(tsval)
	}
	ticks := int64(int32(tsval - uint32(o.ts0)))
	if o.nsPerTS == 0 {
		if len(o.early) < owdEarly {
			o.early = append(o.early, [2]int64{t, ticks})
		}
		if t-o.t0 < owdClockMin || ticks <= 0 {
			return
		}
		o.nsPerTS = clockOf(float64(t-o.t0) / float64(ticks))
		if o.nsPerTS < 0 {
			o.early = nil
			return
		}
		for _, e := range o.early {
			o.note(e[0], e[1])
		}
		o.early = nil
		return
	}
	o.note(t, ticks)
}

// clockOf is the sender's tick (ns) nearest the measured one, within a
// factor of two (the clocks are four times apart or more; a queue that
// grew by the span's length over the first 100 ms reads a tick 2x too
// long); -1 when none is.
func clockOf(measured float64) float64 {
	for _, c := range tsClocks {
		if math.Abs(math.Log2(measured/c)) < 1 {
			return c
		}
	}
	return -1
}

func (o *owdTrack) note(t, ticks int64) {
	d := (t - o.t0) - int64(float64(ticks)*o.nsPerTS)
	if o.n == 0 || d < o.min {
		o.min = d
	}
	o.n++
	b := &o.peaks[(t/owdBucket)%int64(len(o.peaks))]
	if start := t - t%owdBucket; b[0] != start {
		*b = [2]int64{start, d}
	}
	b[1] = max(b[1], d)
	if o.step == 0 {
		o.step = 1
	}
	if o.n%o.step == 0 {
		o.kept = append(o.kept, d)
		if len(o.kept) >= owdKept {
			// Keep every other one, and from now on every 2*step-th.
			for i := range len(o.kept) / 2 {
				o.kept[i] = o.kept[2*i]
			}
			o.kept, o.step = o.kept[:len(o.kept)/2], 2*o.step
		}
	}
}

// ok: the sender's clock is known and enough samples were seen.
func (o *owdTrack) ok() bool { return o.nsPerTS > 0 && o.n >= 20 }

// recentQueue is the most the one-way delay stood over its least within
// window ns before t (to the owdBucket).
func (o *owdTrack) recentQueue(t, window int64) int64 {
	var q int64
	for _, b := range o.peaks {
		if b != ([2]int64{}) && b[0] <= t && t-(b[0]+owdBucket) <= window {
			q = max(q, b[1]-o.min)
		}
	}
	return q
}

// queue90 is the one-way delay's 90th percentile over its least: the
// queue the data met at its top.
func (o *owdTrack) queue90() int64 {
	if len(o.kept) == 0 {
		return 0
	}
	s := slices.Clone(o.kept)
	slices.Sort(s)
	return s[min(len(s)*9/10, len(s)-1)] - o.min
}

// away: the capture is away from d's sender (awayFrom), where its own
// RTT samples cannot see the queue and the one-way delay can.
func (f *Flow) away(d *direction) bool { return awayFrom(d.d, f.minRTT(d)) }

// awayFrom: more than a quarter of the round trip (rtt, ns) lies on the
// sender's side of the capture point (lag).
func awayFrom(lag, rtt int64) bool { return rtt > 0 && 4*lag > rtt }

// owdQueued says, for a capture away from d's sender with its one-way
// delays known, whether a queue stood when the segment resent at t was
// lost: the round trip with the most the delay stood over its least in
// the two round trips before (the gap the loss left arrived then) shows
// a queue standing (diagnose.QueueStood). known false: ask the RTT.
func (f *Flow) owdQueued(d *direction, t int64) (queued, known bool) {
	if !d.owd.ok() || !f.away(d) {
		return false, false
	}
	rtt := f.minRTT(d)
	q := d.owd.recentQueue(t, 2*rtt)
	return diagnose.QueueStood(time.Duration(rtt+q), time.Duration(rtt)), true
}
