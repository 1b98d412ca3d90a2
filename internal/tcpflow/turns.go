package tcpflow

import "time"

// Request/response (see the diagnose package comment): a direction whose
// new data starts while nothing of it is outstanding and after the peer
// sent data is answering a request. The time from the request reaching
// the sender (its capture time plus the sender's lag) to the answer is
// the sender's think time; the ACK the sender sends for the request
// before answering gives the wire RTT from the capture.
//
// turn notes new data from d at t, and, for the first answer, adds the
// sample that starts d's timeline when the request reached the sender,
// so the think time is on it (as application time).
func (f *Flow) turn(d, peer *direction, t int64) {
	if peer.lastNewT == 0 || peer.lastNewT <= d.lastNewT || d.sndUna < d.sndMax {
		return
	}
	reached := peer.lastNewT + d.d
	think := t - reached
	if think < 0 {
		think = 0
	}
	d.turns++
	d.turnT = t
	d.thinkTotal += think
	d.thinkMax = max(d.thinkMax, think)
	if d.turns == 1 {
		d.firstThink = think
		if d.reqAckT > peer.lastNewT {
			d.firstReqAck = d.reqAckT - peer.lastNewT
		}
	}
	if d.segs == 0 && reached < t && reached > f.start {
		f.addSample(d, reached, 0, ackRec{reached, 0, d.rwnd, 0})
		d.sampled = true
	}
}

// thinkMean is the mean think time per answer.
func (d *direction) thinkMean() time.Duration {
	if d.turns == 0 {
		return 0
	}
	return time.Duration(d.thinkTotal / int64(d.turns))
}
