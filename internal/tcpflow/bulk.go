// The common segment of a one-way transfer, on a path of its own.

package tcpflow

import "github.com/longhaul/longhaul/internal/capture"

// bulkOff makes every segment take Flow.packet's general path: the
// tests compare analyses both ways.
var bulkOff bool

// bulk handles a segment from i at t, and reports whether it could,
// when it is the common segment of a one-way transfer: new data in
// order, of a size that changes no MSS, carrying an ACK that tells the
// silent other direction nothing (quietAck, silent), after the
// handshake. It leaves the flow exactly as Flow.packet would
// (TestBulkSameFlows, TestBulkIsPacket), with the tests Flow.packet,
// Flow.data and their callees make for every segment made once: of a
// bulk capture's packets most are these.
func (f *Flow) bulk(i int, s *capture.Segment, o *capture.Options, t int64) bool {
	i &= 1 // as in packet
	d, p := &f.dir[i], &f.dir[i^1]
	n := s.PayloadLen
	// A payload of 2 bytes or more is no probe (probed); one no larger
	// than any before (so not the first: firstData and the base are
	// set), and within the MSS or over its limit (a TSO super-frame),
	// changes no MSS (Flow.data: maxSeg, mss). After the handshake's
	// ACK, handshakeAck has nothing to do. (quietAck refuses SYN, FIN
	// and RST as well: the test of the flags is the quick first one.)
	if s.Flags&(capture.FlagSYN|capture.FlagFIN|capture.FlagRST|capture.FlagACK) != capture.FlagACK ||
		n < 2 || n > d.maxSeg || (n > d.mss && n <= d.mssLimit(f, i)) || f.ackT < 0 || bulkOff {
		return false
	}
	// New data in order (no hole). A silent p never sent new data, so
	// this is no turn (Flow.turn: p.lastNewT is 0).
	seq := d.rel(s.Seq, d.sndMax)
	if seq != d.sndMax || !f.quietAck(i, p, s, o) || !p.silent() {
		return false
	}
	f.packets++
	f.end = t
	f.silentAckTimes(p, t)
	// Flow.data's bookkeeping for new data.
	d.counted(n, s.SuperFrame, t)
	d.sentNew(seq+int64(n), t)
	d.bh.sent(seq, n)
	if o.HasTimestamp {
		d.owd.add(t, o.TSval)
	}
	f.sent(i, d, seq, n, s, o, t)
	// p, silent, sent nothing: only d is sampled.
	f.sample(d, t)
	return true
}
