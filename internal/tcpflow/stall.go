package tcpflow

import (
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// Retransmission kinds are told by evidence (RFC 5681, 6298, 6675, 8985):
//
//   - timeout: the peer had been silent (no ACK at all) for longer than
//     any RTO the sender can have armed: at least rtoFloor, and more than
//     the path RTT plus rtoSlack (Linux's RTO is srtt + max(4 rttvar,
//     200 ms); RFC 6298's minimum is 1 s); or the first unacknowledged
//     segment is resent again that long after its last resend with no
//     SACK since for newer data (the timer runs from the head's
//     transmission and duplicate ACKs do not stop it; RACK would need
//     such a SACK to find the resend lost); or it resends the flight
//     after a timeout before any ACK showed data never resent arrived
//     (RFC 5682's test, Linux's Loss state); or one or two duplicate
//     ACKs without SACK came, too few for a fast retransmit (Linux needs
//     three without SACK, and RACK needs SACK), and the resend left well
//     after the last of them, not clocked by it;
//   - fast: duplicate ACKs or SACK blocks showing a hole came before it
//     (three dupACKs, or fewer with RFC 5827 early retransmit / RACK), or
//     it follows the partial ACKs of a recovery under way;
//   - probe: the last segment sent, resent once after silence outside a
//     recovery with no duplicate ACK or SACK before it, on a connection
//     that may use SACK, before an RTO could have fired: a tail loss
//     probe (RFC 8985, Linux's TCPLossProbes), which draws the SACK that
//     starts a fast recovery (with one segment out Linux waits the RTT
//     plus 200 ms, about when the timer would fire: the probe comes
//     first);
//   - anything else (no evidence, short silence, not the tail) is counted
//     with the timeouts, as timer-driven.
const (
	rtoFloor = 150 * time.Millisecond
	rtoSlack = 100 * time.Millisecond
	// dupThresh is the duplicate ACKs that start a fast retransmit
	// without SACK (RFC 5681; Linux's tcp_reordering).
	dupThresh = 3
	// probeSlack: a tail loss probe leaves before the RTO would have
	// (rtoThreshold) plus this much of the capture's lag and jitter.
	probeSlack = 150 * time.Millisecond
)

// retransKind classifies a retransmission of data not yet acknowledged,
// [seq, end) sent at t; timedOut says the timer fired after silence (a
// stall), not that it continues a recovery a timeout began.
func (f *Flow) retransKind(d *direction, seq, end, t int64) (kind diagnose.EventKind, timedOut bool) {
	thr := f.rtoThreshold(d)
	silence := time.Duration(t - max(d.lastAckT, d.firstData))
	if end >= d.sndMax && !d.recovery && !d.probeOut && d.nsack == 0 && d.dupAcks == 0 && f.maySACK() && silence < thr+probeSlack {
		// The tail, resent once after silence outside a recovery: Linux
		// probes before its timer fires (RFC 8985: after two RTTs, or
		// the RTT plus 200 ms with one segment out, never after the
		// RTO), and sends one probe a tail.
		d.probeOut = true
		return diagnose.EvRetransProbe, false
	}
	if silence >= thr {
		return diagnose.EvRetransRTO, true // no ACK at all for that long
	}
	if seq <= d.sndUna && d.headRetxT > d.ackAdvT && d.rackT <= d.headRetxT && time.Duration(t-d.headRetxT) >= thr {
		// The first unacknowledged segment resent again an RTO after its
		// last resend, with no SACK since for data sent after that resend
		// (which is what lets RACK find a lost retransmission): the
		// timer's. Duplicate ACKs for older data do not rearm it.
		return diagnose.EvRetransRTO, true
	}
	if d.recovery && d.rtoRecovery {
		// After a timeout the sender resends the flight in slow start
		// (Linux's Loss state) until an ACK shows data it never resent
		// arrived (F-RTO, RFC 5682: then it recovers as from dupACKs).
		return diagnose.EvRetransRTO, false
	}
	if d.recovery || d.nsack > 0 || d.dupAcks >= dupThresh {
		// Clocked by ACKs: duplicate ACKs, SACK holes, or the partial
		// ACKs of a recovery under way (also the rest of a flight resent
		// after a timeout, as ACKs return: Linux counts those as fast).
		return diagnose.EvRetransFast, false
	}
	if d.dupAcks > 0 {
		if t-d.lastAckT >= f.clockedWithin(d) {
			return diagnose.EvRetransRTO, true // too few dupACKs: the timer
		}
		return diagnose.EvRetransFast, false // early retransmit (RFC 5827)
	}
	return diagnose.EvRetransRTO, false // a timer with no evidence
}

// clockedWithin is how soon after an ACK a retransmission it triggered
// leaves, as the capture sees it: the sender's lag plus a quarter of the
// RTT (at least 20 ms). Later, the timer sent it.
func (f *Flow) clockedWithin(d *direction) int64 {
	return d.d + max(int64(f.rtt(d))/4, int64(20*time.Millisecond))
}

// maySACK reports whether the connection may use SACK: both SYNs offered
// it (sackOn), or no handshake was seen (a tail loss probe needs SACK in
// Linux).
func (f *Flow) maySACK() bool {
	return !f.dir[0].synSeen || !f.dir[1].synSeen || f.sackOn()
}

// rtoThreshold is the silence after which a retransmission can only be
// the retransmission timer's.
func (f *Flow) rtoThreshold(d *direction) time.Duration {
	return max(rtoFloor, f.rtt(d)+rtoSlack)
}

// stall notes a timeout retransmission at t. A stall runs from when
// the data last moved (the last ACK that advanced, or the last new data)
// to the ACK that moves it again; rtoSinceAck counts the timeouts since
// the peer last said anything at all.
func (d *direction) stall(t int64) {
	if d.rtoRun == 0 {
		d.rtoStalls++
		d.stallFrom = max(d.lastProgress, d.firstData)
	}
	if d.lastAckT > d.rtoLastT {
		d.rtoSinceAck = 0
	}
	d.rtoRun++
	d.rtoSinceAck++
	d.rtoLastT = t
	d.stallTo = t
}

// closeStall adds the current stall's time to the total when the data
// moves again (or the flow ends).
func (d *direction) closeStall() {
	if d.rtoRun > 0 && d.stallTo > d.stallFrom {
		d.stallTime += d.stallTo - d.stallFrom
	}
	d.rtoRun, d.rtoSinceAck, d.bhRun = 0, 0, 0
	d.stallFrom, d.stallTo = 0, 0
}

// unresponsive reports whether the peer stopped answering for good: the
// sender's last timeout retransmissions (two or more, backing off) drew
// no ACK at all until the capture ends or the connection is reset, and
// it is not a PMTU black hole's. It
// returns how long the sender kept trying, from the last time the data
// moved to the end of the flow.
func (f *Flow) unresponsive(d *direction) (time.Duration, bool) {
	// A black hole's peer SACKed what passed: it is alive, the path
	// drops one size (blackhole.go).
	if d.rtoRun == 0 || d.rtoSinceAck < 2 || d.lastAckT > d.rtoLastT || d.bhSize > 0 {
		return 0, false
	}
	return time.Duration(f.end - d.stallFrom), true
}

// newsOfUnresent reports whether [l, r), newly acknowledged or SACKed,
// holds data the sender never resent since its timeout (above what it
// resent, in order from the head) and that no earlier SACK reported:
// F-RTO's sign (RFC 5682 3.1 step 3b, Linux's FLAG_ORIG_SACK_ACKED) that
// not everything sent before the timeout was lost, after which the
// sender recovers as from duplicate ACKs.
func (d *direction) newsOfUnresent(l, r int64) bool {
	l = max(l, d.rtoRetxEnd)
	for l < r {
		covered := false
		for i := 0; i < d.nsack; i++ {
			if s := d.sack[i]; s.l <= l && l < s.r {
				l, covered = s.r, true
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}

// eifel judges the first resend of an episode by the first ACK of new
// data after it (RFC 3522, the Eifel detection; Linux's undo by
// timestamps): an ACK echoing a timestamp older than the resend's
// answers the original, so the resend was spurious. Only where SACK is
// off: with SACK the receiver reports the duplicate by D-SACK, counted
// there.
func (f *Flow) eifel(d *direction, o *capture.Options, t int64) {
	d.eifelOn = false
	if f.sackOn() || !o.HasTimestamp || o.TSecr == 0 || int32(o.TSecr-d.eifelTS) >= 0 {
		return
	}
	n := min(d.eifelSegs, d.retrans-d.spurious)
	if n <= 0 {
		return
	}
	d.spurious += n
	d.spuriousBytes += d.eifelBytes
	d.tl.AddEvent(time.Duration(t-f.start), diagnose.EvSpuriousTS, d.sndUna, d.eifelBytes)
}

// sackOn reports whether both SYNs were seen and offered SACK.
func (f *Flow) sackOn() bool {
	a, b := &f.dir[0], &f.dir[1]
	return a.synSeen && b.synSeen && a.syn.SACKPermitted && b.syn.SACKPermitted
}

// finResent counts a FIN sent again (without data) as one retransmitted
// segment, as the sender's stack does (RetransSegs, tcpi_total_retrans):
// spurious once the FIN was acknowledged, else of the kind its evidence
// shows (a tail loss probe, most often). It moves no data, so it starts
// no stall or recovery.
func (f *Flow) finResent(d *direction, seq, t int64) {
	kind := diagnose.EvRetransSpurious
	if !d.finAcked {
		kind, _ = f.retransKind(d, seq, seq+1, t)
	}
	d.retrans++
	d.countKind(kind, 1, 0)
	d.tl.AddEvent(time.Duration(t-f.start), kind, seq, 0)
}

// countKind counts segs retransmitted segments (bytes of payload) of a
// kind (retransKind's, or spurious).
func (d *direction) countKind(kind diagnose.EventKind, segs, bytes int64) {
	switch kind {
	case diagnose.EvRetransSpurious:
		d.spurious += segs
		d.spuriousBytes += bytes
	case diagnose.EvRetransFast:
		d.fast += segs
	case diagnose.EvRetransProbe:
		d.probes += segs
	default:
		d.rto += segs
	}
}

// undoTimeout ends a timeout's recovery that F-RTO proved spurious
// (RFC 5682; Linux's tcp_try_undo_loss returns to the Open state): a
// loss found after it starts a fast recovery of its own, whose recovery
// point is the data sent by then, not the timeout's.
func (d *direction) undoTimeout() {
	d.rtoRecovery, d.recovery = false, false
	d.endEpisode()
}
