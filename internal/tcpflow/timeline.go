// The sender's view over time: a sample of what it had sent and what
// it knew of the receiver's feedback, at each packet and each ACK's
// arrival at a sender away from the capture; and the history of that
// feedback the view is read from (record, view).

package tcpflow

import "time"

// rtt is the best path RTT estimate for direction d: the sender's lag
// plus the data-to-ACK time at the capture point, or the handshake.
func (f *Flow) rtt(d *direction) time.Duration {
	if d.rttN > 0 {
		return time.Duration(d.d + d.srtt)
	}
	return time.Duration(f.hsRTT)
}

// sample adds the sender's view of direction d at time t to its timeline.
func (f *Flow) sample(d *direction, t int64) {
	if d.d > 0 {
		f.catchUp(d, t)
	}
	f.addSample(d, t, d.sndMax, d.view(t))
	d.prevSent, d.sampled = d.sndMax, true
}

// catchUp adds a sample at every instant between the previous sample
// and t when the sender's view changed: an ACK seen at the capture at r.t
// reaches a sender away from the capture d.d later, when no packet may
// be captured; without these samples the time between would keep the
// state of before the ACK (a sender that got its last ACK and went idle
// would look busy until its next packet).
func (f *Flow) catchUp(d *direction, t int64) {
	at := t - d.d
	if !d.sampled {
		// Nothing before the first sample: skip what the sender knew.
		d.view(t)
		return
	}
	for {
		r, ok := d.next(at)
		if !ok {
			return
		}
		changed := r.ack != d.cur.ack || r.sacked != d.cur.sacked || r.rwnd != d.cur.rwnd
		d.cur = r
		if when := r.t + d.d; changed && when > d.prevSampleT {
			f.addSample(d, when, d.prevSent, r)
		}
	}
}

// extendOff makes addSample give every sample to AddSample: the tests
// compare analyses both ways.
var extendOff bool

// addSample adds the sender's state at t (sent bytes, the receiver's
// feedback as the sender knew it) to the direction's timeline.
func (f *Flow) addSample(d *direction, t, sent int64, v ackRec) {
	infl := max(sent-v.ack-v.sacked, 0)
	if v.rwnd >= 0 && d.maxRwnd > 0 && infl > d.maxRwnd {
		// The sender cannot have had more out than it was ever offered:
		// the excess is the error of the lag estimate (data bunched on
		// the way to the capture).
		infl = d.maxRwnd
	}
	mss := d.effMSS()
	d.tl.MSS = int(mss)
	// No flag can be set (out of recovery, no timeout's stall, probe or
	// turn at t, no ACK since the last new data to look for a send gap
	// after): the timeline takes a sample that only sends more without
	// the Sample if the state cannot change (Extend; it refuses an unknown
	// window, so RwndLowerBound is 0 too).
	if !d.recovery && d.rtoLastT != t && d.probeT != t && d.turnT != t && d.ackAdvT <= d.lastNewT && !extendOff &&
		d.tl.Extend(time.Duration(t-f.start), sent, v.ack, infl, v.rwnd, d.retrans-d.spurious, f.rtt(d)) {
		d.prevSampleT = t
		return
	}
	// The direction's own Sample, filled field by field: not a composite
	// literal (built in a temporary and copied in 16-byte moves which wait
	// for the 8-byte stores before them, a store-forwarding stall per
	// packet), nor a fresh one per packet (120 bytes to zero). The fields
	// a capture cannot know (Cwnd, AppLimited, SndbufLimited, RwndLimited)
	// stay zero; every other is set here each time.
	s := &d.smp
	s.T = time.Duration(t - f.start)
	s.Sent = sent
	s.Delivered = v.ack
	s.Inflight = infl
	s.Rwnd = v.rwnd
	s.RTT = f.rtt(d)
	s.Retrans = d.retrans - d.spurious
	s.InRecovery = d.recovery
	s.RwndLowerBound = 0
	if v.rwnd < 0 {
		s.RwndLowerBound = int64(d.raw) << d.lb
	}
	s.TimeoutRecovery = d.recovery && d.rtoRecovery
	s.Stalled = d.rtoRun > 0 && d.rtoLastT == t
	s.ProbeWait = d.probeT == t
	s.SendGap = infl > 0 && d.ackAdvT > d.lastNewT && f.sendGap(d, t, infl, v.rwnd, mss, int64(s.RTT))
	s.Turn = d.turnT == t
	d.tl.AddSample(s)
	d.prevSampleT = t
}

// sendGap reports whether the sender, since the previous sample, sat
// with data in flight and room in the receiver's window after an ACK had
// freed room in its congestion window, and sent nothing new for longer
// than it takes a sender with data to answer an ACK (a quarter RTT, 1 ms,
// two clock ticks): it had nothing to send. This is evidence that
// persists; the size of the last segment is not (real senders mix sizes:
// TSO remainders, TLS records, MSS-sized options).
func (f *Flow) sendGap(d *direction, t, infl, rwnd, mss, rtt int64) bool {
	if infl <= 0 || d.recovery || d.ackAdvT <= d.lastNewT || d.prevSampleT < d.ackAdvT {
		return false
	}
	if rwnd >= 0 && infl >= rwnd-mss {
		return false
	}
	wait := t - (d.ackAdvT + d.d)
	return wait > max(int64(time.Millisecond), rtt/4) && wait > 2*int64(f.clk.tick())
}

// record appends the receiver's feedback to the history the sender's
// view is read from (only when the sender is away from the capture).
func (d *direction) record(t int64) {
	if d.d > 0 {
		d.recordAway(t)
	} else {
		d.cur = ackRec{t, d.sndUna, d.rwnd, d.sacked}
	}
}

// recordAway is record for a sender away from the capture, never
// inlined: record then stays small enough to inline (the ACKs of a
// sender at the capture).
//
//go:noinline
func (d *direction) recordAway(t int64) {
	rec := ackRec{t, d.sndUna, d.rwnd, d.sacked}
	if d.acks == nil {
		d.acks = make([]ackRec, histRing)
	}
	// Thin to about 128 records per D: overwrite a record younger than D/128.
	if d.hLen > 0 {
		last := &d.acks[(d.hHead+d.hLen-1)%histRing]
		if t-last.t < d.d/128 {
			*last = rec
			return
		}
	}
	if d.hLen == histRing {
		// Full: the oldest record goes.
		d.hHead = (d.hHead + 1) % histRing
		d.hLen--
	}
	d.acks[(d.hHead+d.hLen)%histRing] = rec
	d.hLen++
}

// view returns the receiver's feedback as the sender knew it at time t.
// hHead is the next record not yet applied.
func (d *direction) view(t int64) ackRec {
	if d.d > 0 {
		return d.viewAway(t)
	}
	return ackRec{t, d.sndUna, d.rwnd, d.sacked}
}

// viewAway is view for a sender away from the capture (see recordAway).
//
//go:noinline
func (d *direction) viewAway(t int64) ackRec {
	for at := t - d.d; ; {
		r, ok := d.next(at)
		if !ok {
			return d.cur
		}
		d.cur = r
	}
}

// next takes the oldest unread record if it is at or before at.
func (d *direction) next(at int64) (ackRec, bool) {
	if d.hLen == 0 || d.acks[d.hHead].t > at {
		return ackRec{}, false
	}
	r := d.acks[d.hHead]
	d.hHead = (d.hHead + 1) % histRing
	d.hLen--
	return r, true
}
