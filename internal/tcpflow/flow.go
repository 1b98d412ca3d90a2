package tcpflow

import (
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// Options tune an analysis.
type Options struct {
	// MaxPoints > 0 keeps a downsampled series of at most that many
	// points (and 4x as many events) per flow direction, for --timeline.
	MaxPoints int
	// SeriesFlow limits the series to one flow ID (0: every flow).
	SeriesFlow int
	// RateBps is the path's rate if known: it gives the BDP and sizes
	// the fixes.
	RateBps float64
	// MaxFlows bounds how many connections are followed at once and
	// how many are listed (0: DefaultMaxFlows); see evict.go.
	MaxFlows int
}

type key struct{ src, dst netip.AddrPort }

type ref struct {
	f   *Flow
	dir uint8
}

// Flow is one TCP connection. Endpoint 0 sent the first packet seen,
// unless a SYN says which side is the client.
type Flow struct {
	ID      int
	Addr    [2]netip.AddrPort
	client  int // index of the SYN's sender, -1 unknown
	start   int64
	end     int64
	packets int64
	dir     [2]direction // dir[i]: data sent by Addr[i]

	synT, synAckT, ackT int64
	// hsRTT is the handshake's round trip (halves), 0 unknown: read per
	// packet, kept by setHandshakeRTT.
	hsRTT int64
	// pathRTT is the least round trip of any connection between the
	// same hosts (Analyzer.pathRTT), set when the flow is judged; 0
	// unknown.
	pathRTT             int64
	synRetrans          bool
	synAckSeen, synSeen bool
	shiftKnown          [2]bool
	shift               [2]uint8 // applied to windows advertised by Addr[i]
	scale               string
	noScaleSide         int
	fin                 [2]bool
	rst                 bool
	opts                *Options
	series              bool
	clk                 *clock // the analyzer's, for the tick
	evicted             bool   // no longer followed (evict.go)
}

func newFlow(id int, s *capture.Segment, t int64, o *Options) *Flow {
	f := &Flow{ID: id, client: -1, start: t, end: t, opts: o, scale: diagnose.ScaleUnknown, noScaleSide: -1, synT: -1, synAckT: -1, ackT: -1, clk: &clock{}}
	f.Addr[0] = netip.AddrPortFrom(s.Src, s.SrcPort)
	f.Addr[1] = netip.AddrPortFrom(s.Dst, s.DstPort)
	f.series = o.MaxPoints > 0 && (o.SeriesFlow == 0 || o.SeriesFlow == id)
	for i := range f.dir {
		f.dir[i].rwnd = -1
		f.dir[i].firstData = -1
		f.dir[i].setEff()
		f.dir[i].tl.MaxEvents = 4 * o.MaxPoints
		f.dir[i].tl.DrainIsApp = true
		if f.series {
			f.dir[i].tl.MaxPoints = o.MaxPoints
		}
	}
	return f
}

// closed reports whether the connection ended (so a new SYN on the same
// ports is a new flow).
func (f *Flow) closed() bool { return f.rst || (f.fin[0] && f.fin[1]) }

// packet handles one segment from endpoint i at time t (ns, sanitized).
func (f *Flow) packet(i int, s *capture.Segment, o *capture.Options, t int64) {
	i &= 1 // 0 or 1 already: the mask (and i^1 for the other) drops the bounds checks of f.dir
	f.packets++
	f.end = t
	snd := &f.dir[i]
	if s.Flags&capture.FlagRST != 0 {
		f.rst = true
	}
	if s.Flags&capture.FlagSYN != 0 {
		f.syn(i, s, o, t)
		return
	}
	if s.Flags&capture.FlagACK != 0 {
		if f.ackT < 0 { // (handshakeAck's first test, without the call)
			f.handshakeAck(i, s, t)
		}
		if p := &f.dir[i^1]; f.quietAck(i, p, s, o) {
			if p.silent() {
				f.silentAckTimes(p, t)
			} else {
				f.ackTimes(p, t) // all of f.ack such an ACK changes
			}
		} else {
			f.ack(i, s, o, t)
		}
	}
	if s.PayloadLen > 0 || s.Flags&capture.FlagFIN != 0 || (snd.haveBase && snd.rel(s.Seq, snd.sndMax) == snd.sndMax-1) {
		f.data(i, s, o, t)
	}
	if s.Flags&capture.FlagFIN != 0 {
		f.fin[i] = true
	}
	// Each direction that carries data is sampled (independently: in
	// a fixed order, so the branches follow the flow, not the packet).
	if f.dir[0].segs > 0 {
		f.sample(&f.dir[0], t)
	}
	if f.dir[1].segs > 0 {
		f.sample(&f.dir[1], t)
	}
}

// ack handles the acknowledgement and window in a segment from i, which
// are about the data the other endpoint sends: in the order a receiver
// reads an ACK (RFC 5681/6675), new data acknowledged, duplicate ACKs,
// SACK blocks, F-RTO's verdict, the window. (An ACK that tells p
// nothing, quietAck, the caller hands to ackTimes alone: most of a
// one-way transfer's data segments carry one.)
func (f *Flow) ack(i int, s *capture.Segment, o *capture.Options, t int64) {
	i &= 1 // as in packet
	p := &f.dir[i^1]
	if !p.haveBase {
		p.setBase(s.Ack)
	}
	ack := p.rel(s.Ack, p.sndMax)
	if ack > p.sndMax {
		// The receiver got data the capture did not see (capture drops or
		// asymmetric routing), or the ACK of a FIN.
		p.finAcked = p.finAcked || (p.fin && ack == p.sndMax+1)
		if !(p.fin && ack == p.sndMax+1) {
			p.missed += ack - p.sndMax
			p.sndMax = ack
		}
	}
	w := f.window(i, s)
	p.raw = s.Window
	// The ACK of a FIN (one past the data) moves no data.
	newData := min(ack, p.sndMax) > p.sndUna
	if s.PayloadLen == 0 && s.Flags&capture.FlagFIN == 0 {
		p.pureAcks++
		if newData {
			f.dir[i].reqAckT = t
		}
	}
	undone := false // F-RTO (stall.go: frtoAck)
	if newData && p.rtoRecovery && p.frto && p.newsOfUnresent(p.sndUna, min(ack, p.sndMax)) {
		p.undoTimeout()
		undone = true
	}
	if newData && p.rtoRecovery && p.frto && min(ack, p.sndMax) < p.frtoHigh {
		p.frtoHigh = p.sndMax // RFC 5682 step 2.b: new data goes out now
	}
	if newData && p.eifelOn {
		f.eifel(p, o, t)
	}
	dup := false
	if newData {
		f.ackedNew(&f.dir[i], p, ack, t)
	} else if ack == p.sndUna && s.PayloadLen == 0 && s.Flags&capture.FlagFIN == 0 && p.sndMax > p.sndUna && s.Window == p.lastRawAdv {
		p.dupAcks++
		dup = true
	}
	p.lastRawAdv = s.Window
	sacks := false
	if o.NSACK > 0 {
		var sackUndone bool
		sacks, sackUndone = f.sackBlocks(p, o, ack, t)
		undone = undone || sackUndone
	}
	// F-RTO step 3.a: once the data of step 2.b is out, a duplicate ACK
	// or a SACK with no news of data sent before proves the loss real:
	// no undo, the flight is resent in slow start, the timer's doing
	// (Linux counts TCPSlowStartRetrans).
	if p.rtoRecovery && p.frto && !undone && p.sndMax > p.frtoHigh && (dup || sacks) {
		p.frto = false
	}
	if newData || o.NSACK > 0 {
		p.pruneSACK()
	}
	f.windowSeen(p, w, ack, t)
	f.ackTimes(p, t)
}

// window is the receive window in a segment from i, in bytes; -1 when
// the scale is unknown (0 is 0 whatever the scale).
func (f *Flow) window(i int, s *capture.Segment) int64 {
	switch {
	case f.shiftKnown[i]:
		return int64(s.Window) << f.shift[i]
	case s.Window == 0:
		return 0
	}
	return -1
}

// ackedNew moves p's snd.una to an ACK of new data sent by p (acker is
// the direction the ACK came from): an RTT sample (Karn), the end of a
// timeout stall or of a recovery, SACKed holes acknowledged.
func (f *Flow) ackedNew(acker, p *direction, ack, t int64) {
	if p.timing && ack >= p.timedEnd {
		p.addRTT(t - p.timedAt)
		if ack-p.sndUna < 2*p.effMSS() {
			p.rttLone++
		}
		p.timing = false
		if p.rttN == 8 || p.rttN%64 == 0 {
			f.lagFromData(acker, p)
		}
	}
	p.sndUna = min(ack, p.sndMax)
	p.dupAcks, p.probeOut = 0, false
	p.lastProgress, p.ackAdvT = t, t
	if p.rtoRun > 0 {
		p.stallTo = t
		p.closeStall()
	}
	if p.recovery && p.sndUna >= p.recoverPoint {
		p.recovery, p.rtoRecovery = false, false
		p.endEpisode()
	}
	p.ackedHoles()
}

// sackBlocks reads an ACK's SACK blocks (RFC 2018) and D-SACK (RFC 2883:
// a first block below the cumulative ACK or inside the second block)
// about p's data: whether a block brought news, and whether it undid a
// timeout (F-RTO).
func (f *Flow) sackBlocks(p *direction, o *capture.Options, ack, t int64) (sacks, undone bool) {
	for k := 0; k < o.NSACK; k++ {
		l, r := p.rel(o.SACK[k].Left, p.sndMax), p.rel(o.SACK[k].Right, p.sndMax)
		if k == 0 && (r <= ack || (o.NSACK > 1 && l >= p.rel(o.SACK[1].Left, p.sndMax) && r <= p.rel(o.SACK[1].Right, p.sndMax))) {
			if p.retrans > p.spurious {
				p.spurious += min(segsOf(r-l, p.effMSS()), p.retrans-p.spurious)
				p.spuriousBytes += r - l
				p.tl.AddEvent(time.Duration(t-f.start), diagnose.EvDSACK, l, r-l)
			}
			continue
		}
		if r > ack && r <= p.sndMax+1 {
			sacks = true
			// Only data sent before the timeout (or step 2.b) counts:
			// Linux's FLAG_ORIG_SACK_ACKED is for data up to high_seq.
			if p.rtoRecovery && p.frto && p.newsOfUnresent(max(l, ack), min(r, p.sndMax, p.frtoHigh)) {
				p.undoTimeout()
				undone = true
			}
			p.addSACK(max(l, ack), min(r, p.sndMax))
			if r > p.headRetxMax {
				p.rackT = t // news of data sent after the head's last resend
			}
		}
	}
	return sacks, undone
}

// windowSeen records the window (bytes; -1 unknown) p's peer advertised
// at ack: zero-window stalls (a window of 0, or one closed below a
// segment, what Linux advertises when the reader stops: see
// diagnose.Closed) and the window's range.
func (f *Flow) windowSeen(p *direction, w, ack, t int64) {
	closed := diagnose.Closed(w, p.effMSS(), p.maxRwnd)
	if closed && !p.zw {
		p.zw, p.zwStart = true, t
		p.zwStalls++
		p.tl.AddEvent(time.Duration(t-f.start), diagnose.EvZeroWindow, ack, 0)
	} else if !closed && p.zw {
		p.zw = false
		p.zwTime += t - p.zwStart
		p.tl.AddEvent(time.Duration(t-f.start), diagnose.EvWindowOpen, ack, 0)
	}
	if w >= 0 {
		if !p.winSeen {
			p.winSeen, p.firstRwnd, p.minRwnd = true, w, w
		}
		p.maxRwnd = max(p.maxRwnd, w)
		p.minRwnd = min(p.minRwnd, w)
	}
	p.rwnd = w
}

// data handles the payload (and FIN) of a segment from i: a probe or
// keep-alive, new data, or data sent again (resent: a retransmission of
// some kind, a reordered segment, a hardware duplicate).
func (f *Flow) data(i int, s *capture.Segment, o *capture.Options, t int64) {
	i &= 1 // as in packet
	d := &f.dir[i]
	if !d.haveBase {
		d.setBase(s.Seq)
	}
	n := s.PayloadLen
	seq := d.rel(s.Seq, d.sndMax)
	end := seq + int64(n)
	if s.Flags&capture.FlagFIN != 0 {
		if n == 0 && d.fin && seq == d.sndMax {
			f.finResent(d, seq, t)
			return
		}
		d.fin = true
	}
	if n <= 1 && f.probed(d, s, seq, t) { // (probes carry a byte or none)
		return
	}
	if seq >= d.sndMax && f.dir[i^1].lastNewT > d.lastNewT {
		f.turn(d, &f.dir[i^1], t)
	}
	if d.firstData < 0 {
		d.firstData = t
	}
	d.counted(n, s.SuperFrame, t)
	if n > d.maxSeg {
		d.maxSeg = n
		d.setEff()
	}
	if n > d.mss && n <= d.mssLimit(f, i) {
		d.mss = n
		d.setEff()
	}
	if seq >= d.sndMax {
		if seq > d.sndMax {
			d.addHole(d.sndMax, seq, t)
		}
		d.sentNew(end, t)
		d.bh.sent(seq, n)
		if o.HasTimestamp {
			d.owd.add(t, o.TSval)
		}
	} else if f.resent(d, seq, n, s, o, t) {
		return // a hardware duplicate: not sent by the stack
	}
	f.sent(i, d, seq, n, s, o, t)
}

// probed handles a segment without new payload that is not a
// retransmission: a keep-alive (no byte, or one old byte at snd.una-1)
// or a zero-window probe (the same on Linux, one new byte elsewhere: the
// peer's window tells them apart). It reports whether s was one.
func (f *Flow) probed(d *direction, s *capture.Segment, seq, t int64) bool {
	n := s.PayloadLen
	peerZero := d.zw // the window d's peer offers is closed
	rt := time.Duration(t - f.start)
	switch {
	case n == 0:
		if s.Flags&capture.FlagFIN == 0 && seq == d.sndMax-1 {
			f.probe(d, peerZero, rt, seq)
		}
		return true
	case n == 1 && seq == d.sndMax-1 && d.sndUna >= d.sndMax-1:
		f.probe(d, peerZero, rt, seq)
		return true
	case n == 1 && peerZero && seq >= d.sndUna:
		d.zwp++
		d.tl.AddEvent(rt, diagnose.EvZeroWindowProbe, seq, 1)
		d.sndMax = max(d.sndMax, seq+1)
		return true
	}
	return false
}

// resent handles n bytes at seq below snd.nxt: a hardware duplicate
// (reported, and nothing else changes), a reordered segment filling a
// hole, or a retransmission of the kind the evidence shows, which starts
// or extends a recovery.
func (f *Flow) resent(d *direction, seq int64, n int, s *capture.Segment, o *capture.Options, t int64) (hwdup bool) {
	end := seq + int64(n)
	rt := time.Duration(t - f.start)
	if d.isHWDup(seq, n, s, o, t) {
		d.hwdup++
		d.segs--
		d.bytes -= int64(n)
		d.tl.AddEvent(rt, diagnose.EvHardwareDup, seq, int64(n))
		return true
	}
	if h, ok := d.fillHole(seq, end); ok && t-h.t < f.reorderWindow(d) {
		d.reorder++
		d.tl.AddEvent(rt, diagnose.EvReorder, seq, int64(n))
		return false
	}
	if !d.recovery && end > d.sndUna {
		d.ct.episodes++ // a recovery begins (below: fast or a timeout's)
		d.beginEpisode(f.minRTT(d))
	}
	// A TSO sender's capture holds super-packets: count the MSS-sized
	// segments the stack resent, as its tcpi_total_retrans does.
	segs := segsOf(int64(n), d.effMSS())
	d.retrans += segs
	d.retransBytes += int64(n)
	switch queued, known := f.owdQueued(d, t); {
	case known && queued:
		d.queuedBytes += int64(n)
	case known:
	case d.queued():
		d.queuedBytes += int64(n)
	default:
		d.unsure += int64(n)
	}
	kind, timedOut := diagnose.EvRetransSpurious, false
	if end > d.sndUna {
		kind, timedOut = f.retransKind(d, seq, end, t)
		if seq <= d.sndUna {
			if !d.recovery && o.HasTimestamp {
				// The first resend of an episode: its timestamp tells
				// whether the ACK that follows answers it (Eifel).
				d.eifelOn, d.eifelTS, d.eifelSegs, d.eifelBytes = true, o.TSval, segs, int64(n)
			}
			d.headRetxT, d.headRetxMax = t, d.sndMax
		}
	}
	d.countKind(kind, segs, int64(n))
	switch {
	case kind == diagnose.EvRetransProbe:
		d.probeT = t
	case kind == diagnose.EvRetransRTO && timedOut:
		// F-RTO applies to a timeout outside a fast recovery, or a
		// repeated one (Linux's tcp_enter_loss).
		d.frto = !(d.recovery && !d.rtoRecovery) || d.rtoRun > 0
		d.stall(t)
		d.blackHole(seq, n)
		d.bh.timerResend(seq, d.sndUna, n)
		// A timeout starts a recovery of its own (RFC 6298 5.5; Linux's
		// Loss state), even inside a fast recovery whose retransmission
		// was lost: what follows up to the data sent so far is resent in
		// slow start, by the timer's doing.
		d.recovery, d.rtoRecovery, d.recoverPoint = true, true, d.sndMax
		d.rtoRetxEnd, d.frtoHigh = end, d.sndMax
	}
	d.tl.AddEvent(rt, kind, seq, int64(n))
	if d.rtoRecovery {
		d.rtoRetxEnd = max(d.rtoRetxEnd, end)
	}
	if d.timing && seq < d.timedEnd {
		d.timing = false // Karn: no sample from retransmitted data
	}
	if !d.recovery && end > d.sndUna && kind != diagnose.EvRetransProbe {
		// A probe is no recovery: the SACK it draws may start one.
		d.recovery, d.recoverPoint = true, d.sndMax
		d.rtoRecovery = kind == diagnose.EvRetransRTO
	}
	d.sndMax = max(d.sndMax, end)
	return false
}

// mssLimit is the largest segment that is not a super-frame: the MSS the
// peer offered, or 64 KB when unknown.
func (d *direction) mssLimit(f *Flow, i int) int {
	if d.peerMSS > 0 {
		return d.peerMSS
	}
	return 65535
}

func (f *Flow) probe(d *direction, peerZero bool, rt time.Duration, seq int64) {
	if peerZero {
		d.zwp++
		d.tl.AddEvent(rt, diagnose.EvZeroWindowProbe, seq, 0)
	} else {
		d.keepalive++
		d.tl.AddEvent(rt, diagnose.EvKeepAlive, seq, 0)
	}
}

// reorderWindow: a hole filled sooner than this was reordered, later it
// was lost before the capture point and retransmitted.
func (f *Flow) reorderWindow(d *direction) int64 {
	if r := f.rtt(d); r > 0 {
		return max(int64(r)/4, int64(time.Millisecond))
	}
	return int64(3 * time.Millisecond)
}
