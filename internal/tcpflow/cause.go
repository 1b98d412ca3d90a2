package tcpflow

import (
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Path causes from a capture: what the path did to a direction held by
// its congestion window (loss-limited or a bottleneck), in diagnose's
// vocabulary and by diagnose's rules (LossCause, ReorderCause), from the
// evidence the packets give: the RTT idle (the handshake) and under load
// (the data's samples over the steady transfer), how the losses came
// (recovery episodes and the segments repaired in them, per RTT-long
// interval) and the best rate delivered over an RTT.

// nSteady is how many RTT samples a direction keeps for its loaded RTT
// (thinned evenly over the transfer when there are more).
const nSteady = 64

// minSteady: with fewer samples after slow start, the loaded RTT is the
// median over the whole transfer.
const minSteady = 8

// minTop: with fewer samples their 90th percentile is one or two of them
// (a delayed ACK: 200 ms on a 0.4 ms path in a public capture of 8).
const minTop = 20

// causeTrack is what a direction keeps for its path cause.
type causeTrack struct {
	// episodes counts loss recoveries: a run of retransmissions that
	// repaired one window (a fast recovery, a timeout and what it
	// resent), from the first retransmission to the ACK of all that was
	// outstanding when it began.
	episodes int
	// RTT-long delivery intervals: the current one began at ivStart with
	// ivDelivered bytes delivered (acknowledged or SACKed); intervals
	// counts those that delivered data, peakBps the best rate of one.
	ivOn             bool
	ivStart          int64
	ivDelivered      int64
	delivered        int64
	intervals        int
	peakBps          float64
	partialDelivered bool // the open interval delivered data
	// Late segments the sender's view shows (lateFill): the
	// receiver's SACK scoreboard opened (data SACKed above snd.una) at
	// holeAt, with retrans segments resent and the head last resent at
	// holeHead by then; lateFills counts holes at snd.una then
	// acknowledged with nothing resent since.
	// retxMark holds the segments resent as of retxMarkT, renewed a
	// round trip apart, and retxPrev the mark before it: a scoreboard
	// that opens with no more resent than retxPrev opened with nothing
	// resent for at least a round trip.
	holeOpen           bool
	holeRetx           int64
	holeUna            int64
	retxMark, retxPrev int64
	retxMarkT          int64
	lateFills          int64
	// Loss recoveries by the queue before each (diagnose.Onsets):
	// rttWinMax is the highest path RTT sample (µs) of the RTT-long
	// window begun at rttWinT, rttPrevMax the one before's; an open
	// recovery (epOn) began with epRetx segments resent and a queue
	// delay of epQueue (ns) over a least RTT of epRTT; once it ended
	// they are the last recovery's (epRTT 0: none yet).
	rttWinMax, rttPrevMax uint32
	rttWinT               int64
	epOn                  bool
	epRetx                int64
	epQueue, epRTT        int64
	onsets                diagnose.Onsets
	// rtts holds path RTT samples (µs), one in stride of those offered
	// (offered counts them); ssFrom is the index of the first one after
	// slow start, -1 before. The array last: the counts are read per
	// sample, an element seldom.
	n       int
	stride  int
	offered int
	ssFrom  int
	rtts    [nSteady]uint32
}

// addRTT keeps a path RTT sample (ns), one in stride; when the store
// is full every other sample goes and the stride doubles, so the kept
// ones stay spread evenly over the transfer. (The stride is a power of
// two: a mask, not a division, per sample.)
func (c *causeTrack) addRTT(ns int64, steady bool) {
	if c.stride == 0 {
		c.stride, c.ssFrom = 1, -1
	}
	if steady && c.ssFrom < 0 {
		c.ssFrom = c.n
	}
	c.offered++
	if (c.offered-1)&(c.stride-1) != 0 {
		return
	}
	if c.n == nSteady {
		for i := 0; i < nSteady; i += 2 {
			c.rtts[i/2] = c.rtts[i]
		}
		c.n, c.stride = nSteady/2, 2*c.stride
		if c.ssFrom >= 0 {
			c.ssFrom = (c.ssFrom + 1) / 2
		}
		if (c.offered-1)&(c.stride-1) != 0 {
			return
		}
	}
	c.rtts[c.n] = uint32(min(max(ns/1e3, 0), 1<<32-1))
	c.n++
}

// topRTT notes a path RTT sample (ns) for the queue before a loss.
func (c *causeTrack) topRTT(ns int64) {
	c.rttWinMax = max(c.rttWinMax, uint32(min(max(ns/1e3, 0), 1<<32-1)))
}

// beginEpisode notes a loss recovery beginning (least RTT rtt, ns): the
// segments resent so far and the queue the round trip showed over the
// last round trip or two.
func (d *direction) beginEpisode(rtt int64) {
	c := &d.ct
	d.endEpisode()
	top := int64(max(c.rttWinMax, c.rttPrevMax)) * 1e3
	q := max(top-rtt, 0)
	if top == 0 && c.epRTT > 0 {
		// No round trip timed since the last recovery (Karn: the ACKs
		// of resent data time nothing): the queue before this one is
		// unknown, not none, and this one continues the last. Measured:
		// 50 ms x 100 Mbit/s, 0.01% random loss, a one-BDP queue: slow
		// start's overshoot lost 397 segments, the next recovery 33
		// more, counted with no queue before them, and analyze named a
		// shallow buffer.
		q = c.epQueue
	}
	c.epOn, c.epRetx = true, d.retrans
	c.epQueue, c.epRTT = q, rtt
}

// endEpisode tallies the open recovery, if any (diagnose.Onsets).
func (d *direction) endEpisode() {
	if d.ct.epOn {
		d.ct.onsets = d.onsetsNow()
		d.ct.epOn = false
	}
}

// onsetsNow is the tally with the open recovery, if any, counted.
func (d *direction) onsetsNow() diagnose.Onsets {
	c := &d.ct
	o := c.onsets
	if c.epOn {
		o.Add(d.retrans-c.epRetx, time.Duration(c.epQueue), time.Duration(c.epRTT))
	}
	return o
}

// loadedRTT is the median and the 90th percentile of the samples kept
// after slow start (of all of them when fewer than minSteady came after
// it); 0 without any, and the percentile 0 with fewer than minTop.
func (c *causeTrack) loadedRTT() (median, top time.Duration) {
	s := c.rtts[:c.n]
	if c.ssFrom >= 0 && c.n-c.ssFrom >= minSteady {
		s = c.rtts[c.ssFrom:c.n]
	}
	if len(s) == 0 {
		return 0, 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	median = time.Duration(sorted[len(sorted)/2]) * time.Microsecond
	if len(sorted) >= minTop {
		top = time.Duration(sorted[len(sorted)*9/10]) * time.Microsecond
	}
	return median, top
}

// deliver notes the data delivered (acknowledged or SACKed) as of an
// ACK at t: an interval of at least rtt (ns; 0 unknown) that delivered
// data is counted, with its rate.
func (c *causeTrack) deliver(t, delivered, rtt int64) {
	delivered = max(delivered, c.delivered)
	moved := delivered > c.delivered
	c.delivered = delivered
	if !c.ivOn {
		c.ivOn, c.ivStart, c.ivDelivered = true, t, delivered
		return
	}
	c.partialDelivered = c.partialDelivered || moved
	if rtt <= 0 || t-c.ivStart < rtt {
		return
	}
	if b := delivered - c.ivDelivered; b > 0 {
		c.intervals++
		// The exact rate (two divisions) only when it may beat the
		// peak: the test's margin (1e-9) is far beyond its rounding.
		if dt := t - c.ivStart; float64(b)*8 >= c.peakBps*float64(dt)*(1e-9-1e-18) {
			c.peakBps = max(c.peakBps, float64(b)*8/time.Duration(dt).Seconds())
		}
	}
	c.ivStart, c.ivDelivered, c.partialDelivered = t, delivered, false
}

// causeAck notes an ACK of p's data at t (after its SACK blocks are
// read): the data delivered (causeTrack.deliver) and a hole at snd.una
// filled late (lateFill).
func (f *Flow) causeAck(p *direction, t int64) {
	rtt := f.minRTT(p)
	if c := &p.ct; t-c.rttWinT >= rtt {
		c.rttPrevMax, c.rttWinMax, c.rttWinT = c.rttWinMax, 0, t
	}
	p.ct.deliver(t, p.sndUna+p.sacked, rtt)
	p.lateFill(t, rtt)
}

// lateFill counts reordering as a capture at the sender sees it: a hole
// at snd.una the receiver reported (SACK blocks above it) that the
// cumulative ACK then covered with nothing resent since the scoreboard
// opened, nor for a round trip before, outside a recovery: the segments
// were late, not lost (Linux's own test in tcp_check_sack_reordering:
// never-retransmitted data acknowledged below the highest SACKed). A
// capture at the receiver sees the late segments themselves (fillHole);
// at the sender only this. Conservative: a hole open across a real
// loss's resends is not counted.
func (d *direction) lateFill(t, rtt int64) {
	c := &d.ct
	if c.holeOpen && d.sndUna > c.holeUna && d.retrans == c.holeRetx {
		c.lateFills++
	}
	if t-c.retxMarkT >= rtt {
		c.retxPrev, c.retxMark, c.retxMarkT = c.retxMark, d.retrans, t
	}
	switch {
	case d.nsack == 0:
		c.holeOpen = false
	case !c.holeOpen && !d.recovery && d.retrans == c.retxPrev:
		c.holeOpen, c.holeRetx = true, d.retrans
	}
	c.holeUna = d.sndUna
}

// reordered is how many segments direction d saw reordered: arriving
// out of order at the capture point, or late at the receiver (lateFill).
func (d *direction) reordered() int64 { return max(d.reorder, d.ct.lateFills) }

// minRTT is direction d's path RTT at its least so far: its sender's
// lag plus the least data-to-ACK time, else the handshake's; 0 unknown.
func (f *Flow) minRTT(d *direction) int64 {
	if d.rttN > 0 {
		return d.d + d.rttMin
	}
	return f.hsRTT
}

// pathEvidence is what the capture saw of the path on direction d,
// judged dr, for diagnose.PathCause: a black hole's resent segments,
// the reordering when the capture saw segments out of order, how the
// data lost (the RTT around each loss episode, how many segments at a
// time), or why a capture away from the sender cannot tell the loss
// causes apart. With no RTT measured only a black hole is told.
func (f *Flow) pathEvidence(d *direction, dr *DirReport, in diagnose.Info) diagnose.PathEvidence {
	pe := diagnose.PathEvidence{Bps: dr.ThroughputBps, PathBps: pathmodel.Goodput(in.RateBps)}
	pe.BlackHole = f.blackHoleCause(d, in.Sender)
	if d.rttN == 0 {
		return pe
	}
	fl := dr.Verdict.Flags
	lost := max(d.retrans-d.spurious, 0)
	segs := max(d.segs, segsOf(d.bytes, d.effMSS()))
	if slices.Contains(fl, diagnose.FlagReordering) {
		pe.Reorder = &diagnose.ReorderEvidence{Events: d.reordered(), Spurious: d.spurious, Retrans: d.retrans, Segments: segs,
			MinRTT: time.Duration(f.minRTT(d)), Bps: dr.ThroughputBps, Sender: in.Sender, AtCapture: true}
	}
	pe.Away = awayNote(d.d, f.minRTT(d))
	loaded, top := d.ct.loadedRTT()
	e := diagnose.LossEvidence{MinRTT: time.Duration(f.minRTT(d)), LoadedRTT: loaded, TopRTT: top, Bps: dr.ThroughputBps,
		PeakBps: d.ct.peakBps, MSS: int(d.effMSS()), Sender: in.Sender, LossEvents: d.ct.episodes, Lost: lost, Episodes: true,
		Intervals: d.ct.intervals, Reordered: slices.Contains(fl, diagnose.FlagReordering),
		FilledPath: dr.Verdict.Verdict == diagnose.Bottleneck}
	if on := d.onsetsNow(); on != (diagnose.Onsets{}) {
		e.Onsets = &on
	}
	if d.ct.partialDelivered {
		e.Intervals++
	}
	if h1, h2, ok := f.halves(); ok && h1+h2 > 0 && !slices.Contains(fl, "vantage-proxy") {
		// The handshake's round trip, unless something on the path
		// answered it.
		e.IdleRTT = time.Duration(h1 + h2)
	}
	if p := time.Duration(f.pathRTT); p > 0 && p < e.MinRTT {
		// Another connection between the same hosts saw the path idle.
		e.MinRTT = p
		if e.IdleRTT > p {
			e.IdleRTT = p
		}
	}
	if segs > 0 {
		e.LossRate = float64(lost) / float64(segs)
	}
	pe.Loss = &e
	return pe
}

// awayNote says why a capture taken away from the sender cannot tell
// the loss causes apart, or "": when more than a quarter of the round
// trip (lag of rtt, ns) lies between the sender and the capture point,
// a queue there never shows in the data-to-ACK times the capture takes
// (at the receiver they are the receiver's alone), and without the
// queue random loss, a shallow buffer and bufferbloat look alike.
func awayNote(lag, rtt int64) string {
	if !awayFrom(lag, rtt) {
		return ""
	}
	return fmt.Sprintf("not told: the capture was taken away from the sender (%s of its %s round trip is on the sender's side of the capture point, timed only by the handshake): "+
		"a queue on that part of the path never shows in the capture, so random loss, a shallow buffer and bufferbloat cannot be told apart; capture at the sender to tell",
		units.FormatDuration(time.Duration(lag).Round(100*time.Microsecond)), units.FormatDuration(time.Duration(rtt).Round(100*time.Microsecond)))
}
