// The ACKs that tell a direction nothing new: the data segments of a
// one-way transfer carry one each (most of a bulk capture's packets),
// so they take a shorter path than Flow.ack.

package tcpflow

import (
	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// quietAck reports whether the ACK in a data segment from i tells p (the
// other direction) nothing: the cumulative ACK at p's snd.nxt with nothing
// outstanding, the window and its closed state as the last ACK left them,
// no SACK blocks. The data segments of a one-way transfer carry such ACKs;
// all the rest of Flow.ack would leave p as it is.
func (f *Flow) quietAck(i int, p *direction, s *capture.Segment, o *capture.Options) bool {
	if s.PayloadLen == 0 || s.Flags&(capture.FlagFIN|capture.FlagSYN|capture.FlagRST) != 0 || o.NSACK != 0 || !p.haveBase ||
		p.sndMax != p.sndUna || s.Ack != p.base+uint32(p.sndMax) || s.Window != p.raw || s.Window != p.lastRawAdv {
		return false
	}
	w := f.window(i, s)
	switch {
	case w != p.rwnd:
		return false
	case w > 0 && 2*w >= p.maxRwnd:
		return !p.zw // open (diagnose.Closed), without the MSS
	}
	return diagnose.Closed(w, p.effMSS(), p.maxRwnd) == p.zw
}

// ackTimes notes an ACK of p's data at t, read (its data delivered, a
// hole filled late: causeAck) and recorded for the sender's view.
func (f *Flow) ackTimes(p *direction, t int64) {
	f.causeAck(p, t)
	p.lastAckT = t
	p.record(t)
}

// silent reports whether direction d has sent nothing and had nothing
// acknowledged: the ACKs a one-way transfer's data segments carry are
// about such a direction (silentAckTimes).
func (d *direction) silent() bool {
	// All zero, as one OR: one test, where seven (all taken in a one-way
	// transfer, each a load and a branch) cost 21 instructions a packet.
	return d.segs|d.sndMax|int64(d.nsack)|d.sacked|d.retrans|d.ct.delivered|d.ct.ivDelivered == 0
}

// silentAckTimes is ackTimes for a quiet ACK (Flow.quietAck) of a
// silent direction p: causeAck and record with every count zero, so
// only the clocks move (the RTT-long windows and intervals begin
// again). It leaves p as ackTimes would (TestSilentAckTimes) without
// ackTimes' general tests: a one-way transfer's data segments carry one
// such ACK each (343,338 of the bench excerpt's 500,000 packets, where
// it saves 7 M instructions of ackTimes' ~47 M).
func (f *Flow) silentAckTimes(p *direction, t int64) {
	rtt := f.minRTT(p)
	c := &p.ct
	if t-c.rttWinT >= rtt {
		c.rttPrevMax, c.rttWinMax, c.rttWinT = c.rttWinMax, 0, t
	}
	switch { // deliver(t, 0, rtt)
	case !c.ivOn:
		c.ivOn, c.ivStart = true, t
	case rtt > 0 && t-c.ivStart >= rtt:
		c.ivStart, c.partialDelivered = t, false
	}
	if t-c.retxMarkT >= rtt { // lateFill
		c.retxPrev, c.retxMark, c.retxMarkT = c.retxMark, 0, t
	}
	c.holeOpen, c.holeUna = false, 0
	p.lastAckT = t
	p.record(t)
}
