package tcpflow

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Retransmission kinds are told by evidence (RFC 5681, 6298, 6675):
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
//     (RFC 5682's test, Linux's Loss state);
//   - fast: duplicate ACKs or SACK blocks showing a hole came before it
//     (three dupACKs, or fewer with RFC 5827 early retransmit / RACK), or
//     it follows the partial ACKs of a recovery under way;
//   - anything else (no evidence, short silence: a tail loss probe) is
//     counted with the timeouts, as timer-driven.
const (
	rtoFloor = 150 * time.Millisecond
	rtoSlack = 100 * time.Millisecond
)

// retransKind classifies a retransmission of data not yet acknowledged,
// sent at t; timedOut says the timer fired after silence (a stall), not
// that it continues a recovery a timeout began.
func (f *Flow) retransKind(d *direction, seq, t int64) (kind diagnose.EventKind, timedOut bool) {
	thr := f.rtoThreshold(d)
	if time.Duration(t-max(d.lastAckT, d.firstData)) >= thr {
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
	if d.dupAcks >= 1 || d.nsack > 0 || d.recovery {
		// Clocked by ACKs: duplicate ACKs, SACK holes, or the partial
		// ACKs of a recovery under way (also the rest of a flight resent
		// after a timeout, as ACKs return: Linux counts those as fast).
		return diagnose.EvRetransFast, false
	}
	return diagnose.EvRetransRTO, false // a timer with no evidence: a tail loss probe
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
	d.rtoRun, d.rtoSinceAck = 0, 0
	d.stallFrom, d.stallTo = 0, 0
}

// unresponsive reports whether the peer stopped answering for good: the
// sender's last timeout retransmissions (two or more, backing off) drew
// no ACK at all until the capture ends or the connection is reset. It
// returns how long the sender kept trying, from the last time the data
// moved to the end of the flow.
func (f *Flow) unresponsive(d *direction) (time.Duration, bool) {
	if d.rtoRun == 0 || d.rtoSinceAck < 2 || d.lastAckT > d.rtoLastT {
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
