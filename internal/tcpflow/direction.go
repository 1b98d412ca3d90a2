package tcpflow

import (
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// rng is a byte range [l, r) in relative sequence space.
type rng struct{ l, r int64 }

// sent remembers a recent transmission for hardware-duplicate checks.
type sent struct {
	seq   int64
	t     int64
	n     uint32 // a payload's length fits (records are at most 4 GB)
	tsval uint32
	ipid  uint16
	hasTS bool
}

// hole is a gap in the sequence space seen at the capture point.
type hole struct {
	rng
	t int64
}

// ackRec is the receiver's feedback as seen at the capture point at time t.
type ackRec struct {
	t      int64
	ack    int64
	rwnd   int64
	sacked int64
}

// nRecent is a power of two: the ring's index wraps by a mask.
const (
	nRecent  = 8
	nHoles   = 8
	nSACK    = 8
	nHist    = 256 // RTT histogram: 1/8 octave buckets from 1 µs
	histRing = 256
)

// direction is the state of the data one endpoint sends.
type direction struct {
	haveBase bool
	base     uint32 // sequence number of relative byte 0
	sndMax   int64  // highest byte sent + 1 (relative)
	sndUna   int64  // highest cumulative ACK from the peer
	synSeen  bool
	syn      capture.Options // options of this endpoint's SYN or SYN-ACK
	mss      int             // largest segment not over the MSS
	peerMSS  int             // the MSS the receiver offered in its SYN
	maxSeg   int
	// eff is effMSS's answer, worked out again by setEff whenever one of
	// mss, peerMSS, maxSeg or syn changes (it is read per packet).
	eff int64

	// The peer's window for this data.
	rwnd       int64 // scaled; -1 unknown scale
	raw        uint16
	winSeen    bool
	firstRwnd  int64
	maxRwnd    int64
	minRwnd    int64
	lastRawAdv uint16
	lb         uint8 // lower bound of the unknown shift
	zw         bool
	zwStart    int64
	zwStalls   int
	zwTime     int64

	dupAcks  int
	sack     [nSACK]rng
	nsack    int
	sacked   int64
	lastAckT int64

	// RTT: one timed segment at a time (Karn: never a retransmitted one).
	timing   bool
	timedEnd int64
	timedAt  int64
	srtt     int64
	rttN     int64
	rttMin   int64
	rttMax   int64
	rttLast  int64
	// rttLone counts the samples whose ACK covered under two segments: a
	// receiver may hold such an ACK on its delayed-ACK timer (40-200 ms).
	rttLone int64

	recovery     bool
	rtoRecovery  bool  // the recovery began with a timeout, no F-RTO undo yet
	rtoRetxEnd   int64 // the highest byte resent since the timeout
	frto         bool  // F-RTO's undo applies to this timeout
	frtoHigh     int64 // F-RTO's high_seq: data sent after it is no proof of a spurious timeout
	recoverPoint int64
	// Timeout stalls (see stall.go): lastProgress is when the data last
	// moved (an ACK advanced or new data was sent); a run of timeout
	// retransmissions with no ACK in between is one stall, from
	// stallFrom to stallTo.
	lastProgress                   int64
	rtoStalls, rtoRun, rtoSinceAck int
	rtoLastT                       int64
	stallFrom, stallTo             int64
	stallTime                      int64
	// A PMTU black hole's signature (blackhole.go): the run of timeout
	// resends of the head at bhSeg bytes, and once it is long enough the
	// size that never passed, the largest SACK block that did and the
	// longest run.
	bhSeg, bhRun                int
	bhSize, bhPassed, bhResends int
	bh                          bhTrack
	retrans                     int64
	fast, rto, probes           int64
	// Eifel (stall.go): the first resend of an episode, its timestamp
	// and segments, until the next ACK of new data judges it.
	eifelOn    bool
	eifelTS    uint32
	eifelSegs  int64
	eifelBytes int64
	spurious   int64
	// retransmitted payload, the part of it found spurious, and the part
	// sent while a queue stood on the path (see queued)
	retransBytes, spuriousBytes, queuedBytes int64
	// unsure is payload resent while the last RTT sample showed no queue:
	// the next sample decides (a capture's samples are sparse, and slow
	// start's last one before it overflowed the queue was taken while
	// the queue was still filling: measured, 106.6 ms on an 80 ms path
	// before 895 segments were lost at a full 1-BDP queue, the next
	// sample 159 ms).
	unsure    int64
	hwdup     int64
	reorder   int64
	zwp       int64
	keepalive int64
	missed    int64 // bytes acknowledged that the capture never saw
	recent    [nRecent]sent
	ri        int
	holes     [nHoles]hole
	nholes    int

	bytes     int64 // payload including retransmissions
	segs      int64
	super     int64
	firstData int64
	lastData  int64
	lastSend  int64
	// ackAdvT: the last ACK that advanced snd.una; lastNewT: the last
	// new data; prevSampleT: this direction's previous sample (send gaps).
	ackAdvT, lastNewT, prevSampleT int64
	headRetxT                      int64 // the last resend of the segment at snd.una
	headRetxMax                    int64 // snd.max at that resend
	rackT                          int64 // the last SACK of data sent after it
	prevSent                       int64 // sndMax at the previous sample
	sampled                        bool
	// Request/response (turns.go): answers, think times, and the time
	// this end's last pure ACK of the peer's data was seen.
	turns                   int
	thinkTotal, thinkMax    int64
	firstThink, firstReqAck int64
	reqAckT, turnT          int64
	pureAcks                int64 // ACKs without payload from the peer
	fin, finAcked           bool
	probeOut                bool  // a tail loss probe since the last ACK of new data
	probeT                  int64 // when the last one left

	// The sender's view lags the capture by d (ns): acks in history.
	// lagFromData: d came from the other direction's ACK times, not the
	// handshake (see Flow.lagFromData).
	// lagDelay: what fitLag cut from d as the sender's delayed ACK.
	d           int64
	lagFromData bool
	lagDelay    int64
	acks        []ackRec // ring of histRing records, allocated on first use
	hHead, hLen int      // oldest unread record and the number unread
	cur         ackRec

	tl  diagnose.Timeline
	smp diagnose.Sample // addSample's, reused
	ct  causeTrack      // the evidence of its path cause (cause.go)

	// The RTT samples' histogram (rttBucket), last: one of its lines is
	// touched per sample, and it would keep the fields above apart.
	hist [nHist]uint32
	// owd is the one-way delay of the new data, from the sender's
	// timestamps: the queue a capture away from the sender sees.
	owd owdTrack
}

// rel unwraps a 32-bit sequence number near ref.
func (d *direction) rel(x uint32, ref int64) int64 {
	return ref + int64(int32(x-(d.base+uint32(ref))))
}

func (d *direction) setBase(seq uint32) {
	d.haveBase, d.base = true, seq
	d.sndMax, d.sndUna, d.rwnd = 0, 0, -1
	d.firstData = -1
}

// effMSS is the segment size used for "within one MSS" tests.
func (d *direction) effMSS() int64 { return d.eff }

// setEff works effMSS out again; call it after changing mss, peerMSS,
// maxSeg or syn.
func (d *direction) setEff() { d.eff = d.calcMSS() }

// calcMSS is effMSS worked out from what it depends on.
func (d *direction) calcMSS() int64 {
	switch {
	case d.peerMSS > 0 && d.maxSeg > d.peerMSS:
		// TSO frames at the sender: the few segments under the MSS may
		// all be tails (a 234-byte probe into a closed window), so the
		// MSS is the receiver's offer less the timestamp option.
		m := d.peerMSS
		if d.syn.HasTimestamp {
			m -= 12
		}
		return int64(max(d.mss, m))
	case d.mss > 0: // what the sender actually sends
		return int64(d.mss)
	case d.peerMSS > 0: // what the receiver allows
		return int64(d.peerMSS)
	}
	return 1448
}

func (d *direction) addRTT(ns int64) {
	if ns <= 0 {
		ns = 1
	}
	d.rttN++
	if d.rttMin == 0 || ns < d.rttMin {
		d.rttMin = ns
	}
	d.rttMax = max(d.rttMax, ns)
	d.rttLast = ns
	if d.unsure > 0 && d.queued() {
		d.queuedBytes += d.unsure
	}
	d.unsure = 0
	if d.srtt == 0 {
		d.srtt = ns
	} else {
		d.srtt += (ns - d.srtt) / 8
	}
	d.hist[rttBucket(ns)]++
	d.ct.addRTT(d.d+ns, d.tl.SlowStartDone())
	d.ct.topRTT(d.d + ns)
}

// eighths[j] is 2^(j/8): the bucket boundaries within an octave.
var eighths = func() (t [8]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 8)
	}
	return t
}()

// rttBucket is floor(8 log2(µs)), clamped to the histogram: computed
// from the float's exponent and a comparison with the eighths of an
// octave, because math.Log2 per sample showed in profiles.
func rttBucket(ns int64) int {
	us := float64(ns) / 1e3
	if us <= 1 {
		return 0
	}
	// us = f * 2^e, f in [1, 2), from the float's bits (math.Frexp,
	// which is not inlined, gives the same); us > 1 is a normal number.
	bits := math.Float64bits(us)
	e := int(bits>>52&0x7ff) - 1023
	f := math.Float64frombits(bits&(1<<52-1) | 1023<<52)
	// The largest j with f >= eighths[j], by halving (eighths rises).
	j := 0
	if f >= eighths[4] {
		j = 4
	}
	if f >= eighths[j+2] {
		j += 2
	}
	if f >= eighths[j+1] {
		j++
	}
	return min(max(e*8+j, 0), nHist-1)
}

// queued reports whether a queue stood on the path at the last RTT
// sample (diagnose.QueueStood), once a few samples give the minimum.
func (d *direction) queued() bool {
	return d.rttN >= 4 && diagnose.QueueStood(time.Duration(d.rttLast), time.Duration(d.rttMin))
}

// rttQuantile returns the q-quantile of the ACK RTT samples (bucket mid).
func (d *direction) rttQuantile(q float64) time.Duration {
	if d.rttN == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(d.rttN)))
	var n int64
	for b, c := range d.hist {
		n += int64(c)
		if n >= max(want, 1) {
			us := math.Exp2((float64(b) + 0.5) / 8)
			v := time.Duration(us * 1e3)
			return min(max(v, time.Duration(d.rttMin)), time.Duration(d.rttMax))
		}
	}
	return time.Duration(d.srtt)
}

// addSACK merges [l, r) into the scoreboard.
func (d *direction) addSACK(l, r int64) {
	if r <= l {
		return
	}
	for i := 0; i < d.nsack; i++ {
		s := &d.sack[i]
		if l <= s.r && r >= s.l { // overlaps or touches
			l, r = min(l, s.l), max(r, s.r)
			d.sack[i] = d.sack[d.nsack-1]
			d.nsack--
			i = -1 // rescan with the grown range
		}
	}
	if d.nsack == nSACK {
		// Drop the lowest range: the scoreboard is an estimate.
		lo := 0
		for i := 1; i < d.nsack; i++ {
			if d.sack[i].l < d.sack[lo].l {
				lo = i
			}
		}
		d.sack[lo] = d.sack[d.nsack-1]
		d.nsack--
	}
	d.sack[d.nsack] = rng{l, r}
	d.nsack++
}

// pruneSACK drops what the cumulative ACK covers and recomputes sacked.
func (d *direction) pruneSACK() {
	d.sacked = 0
	for i := 0; i < d.nsack; i++ {
		s := &d.sack[i]
		if s.r <= d.sndUna {
			d.sack[i] = d.sack[d.nsack-1]
			d.nsack--
			i--
			continue
		}
		s.l = max(s.l, d.sndUna)
		d.sacked += min(s.r, d.sndMax) - s.l
	}
	d.sacked = max(d.sacked, 0)
}

func (d *direction) remember(seq int64, n int, s *capture.Segment, o *capture.Options, t int64) {
	// Field by field (see Flow.addSample).
	r := &d.recent[d.ri]
	r.seq, r.t, r.n, r.tsval, r.ipid, r.hasTS = seq, t, uint32(n), o.TSval, s.IPID, o.HasTimestamp
	d.ri = (d.ri + 1) & (nRecent - 1)
}

// isHWDup reports whether the segment was already captured once: the
// same bytes with the same IPv4 ID (a retransmission gets a new one), or
// for IPv6 and ID-less stacks the same TSval within a millisecond.
func (d *direction) isHWDup(seq int64, n int, s *capture.Segment, o *capture.Options, t int64) bool {
	for i := range d.recent {
		r := &d.recent[i]
		if int(r.n) != n || r.seq != seq || r.n == 0 || t-r.t > int64(time.Second) {
			continue
		}
		if s.IPVersion == 4 && s.IPID != 0 {
			if r.ipid == s.IPID {
				return true
			}
			continue
		}
		if r.hasTS && o.HasTimestamp && r.tsval == o.TSval && t-r.t < int64(time.Millisecond) {
			return true
		}
	}
	return false
}

// fillHole returns the hole [seq, end) falls in, removing the filled
// part; ok is false when it fills none.
func (d *direction) fillHole(seq, end int64) (h hole, ok bool) {
	for i := 0; i < d.nholes; i++ {
		x := d.holes[i]
		if seq >= x.r || end <= x.l {
			continue
		}
		switch {
		case seq <= x.l && end >= x.r:
			d.holes[i] = d.holes[d.nholes-1]
			d.nholes--
		case seq <= x.l:
			d.holes[i].l = end
		case end >= x.r:
			d.holes[i].r = seq
		default: // splits it; keep the lower part, the rest is a new hole
			d.holes[i].r = seq
			if d.nholes < nHoles {
				d.holes[d.nholes] = hole{rng{end, x.r}, x.t}
				d.nholes++
			}
		}
		return x, true
	}
	return hole{}, false
}

func (d *direction) addHole(l, r, t int64) {
	if d.nholes == nHoles {
		// Forget the oldest: it was lost before the capture and never
		// retransmitted within our view, or the capture dropped it.
		old := 0
		for i := 1; i < d.nholes; i++ {
			if d.holes[i].t < d.holes[old].t {
				old = i
			}
		}
		d.holes[old] = d.holes[d.nholes-1]
		d.nholes--
	}
	d.holes[d.nholes] = hole{rng{l, r}, t}
	d.nholes++
}

// ackedHoles drops holes below the cumulative ACK: data the receiver got
// that the capture never saw.
func (d *direction) ackedHoles() {
	for i := 0; i < d.nholes; i++ {
		h := &d.holes[i]
		if h.r <= d.sndUna {
			d.missed += h.r - h.l
			d.holes[i] = d.holes[d.nholes-1]
			d.nholes--
			i--
		}
	}
}

// segsOf is how many segments of mss bytes n bytes of payload make
// (rounded up; at least one).
func segsOf(n, mss int64) int64 {
	if mss <= 0 || n <= mss {
		return 1
	}
	return (n + mss - 1) / mss
}

// counted counts n bytes of payload sent at t (super: a super-frame).
func (d *direction) counted(n int, super bool, t int64) {
	d.lastData = t
	d.segs++
	d.bytes += int64(n)
	if super || n > 65535 {
		d.super++
	}
}

// sentNew moves snd.nxt to end, new data sent at t, and times the first
// segment sent while none is timed (Karn).
func (d *direction) sentNew(end, t int64) {
	d.sndMax = end
	d.lastProgress, d.lastNewT = t, t
	if !d.timing {
		d.timing, d.timedAt, d.timedEnd = true, t, end
	}
}

// sent notes a segment from i that the stack sent at t (new or resent):
// the last send, the segment for spotting hardware duplicates, and the
// lower bound on an unknown window scale.
func (f *Flow) sent(i int, d *direction, seq int64, n int, s *capture.Segment, o *capture.Options, t int64) {
	d.lastSend = t
	d.remember(seq, n, s, o, t)
	if !f.shiftKnown[i&1^1] && d.raw > 0 {
		d.scaleBound()
	}
}

// scaleBound: with the scale unknown, the flight proves a lower bound on
// the shift.
func (d *direction) scaleBound() {
	flight := d.sndMax - d.sndUna - d.sacked
	for d.lb < 14 && flight > int64(d.raw)<<d.lb {
		d.lb++
	}
}
