package linkemu

import (
	"math"
	"math/rand/v2"
	"time"
)

// Packet describes what the model needs of a packet read from the TUN: a
// plain packet is one segment, a GSO super-packet (virtio_net_hdr + TSO)
// several segments that share the same headers on the wire.
type Packet struct {
	// HeaderLen is the IP + transport header length of each segment on the
	// wire. For a plain packet with SegPayload nil it is the whole IP length.
	HeaderLen int
	// SegPayload holds the payload bytes of each segment. Nil or empty means
	// one segment of SegPayload 0: Packet{HeaderLen: ipLen} is a plain packet
	// (and costs no allocation).
	SegPayload []int
}

// NumSegments returns the number of segments in p (at least 1).
func (p Packet) NumSegments() int { return max(len(p.SegPayload), 1) }

// segIP returns the IP length of segment i.
func (p Packet) segIP(i int) int {
	if len(p.SegPayload) == 0 {
		return p.HeaderLen
	}
	return p.HeaderLen + p.SegPayload[i]
}

// Run is a contiguous run of surviving segments of a super-packet: segments
// First .. First+Count-1 (indices into Packet.SegPayload). Due is the due
// time of its last segment.
type Run struct {
	First, Count int
	Due          time.Duration
}

// DropCounts counts dropped segments by cause.
type DropCounts struct {
	Queue    int // drop-tail bottleneck queue full
	Loss     int // random loss (Config.Loss) and outages (Config.Outages)
	Policer  int // over the policer's token bucket (Config.Policer)
	Overload int // the model's pending FIFO was full (emulator overload)
}

// Total is the number of segments dropped for any cause.
func (d DropCounts) Total() int { return d.Queue + d.Loss + d.Policer + d.Overload }

// Verdict is the fate of a packet. All times are time.Duration offsets from
// the epoch of the now values passed to the Link.
//
// From Enqueue: if Whole, every segment survives and the packet departs
// whole at Due (the due time of its last segment). Otherwise Keep lists the
// surviving runs in order, each with its own due time, and Due is the due
// time of the last run; Keep is empty (and Due 0) when everything was
// dropped. Drops counts the dropped segments.
//
// From PopDue: either the whole packet (Whole true) or exactly one run
// (Keep has one element), in due order; Due is the due time of what is
// popped, Drops is zero, and Final is true on the last pop for the handle,
// after which the data plane may reuse the handle's buffer.
//
// Keep slices are shared with the Link's pending FIFO: do not modify them.
type Verdict struct {
	Due   time.Duration
	Whole bool
	Keep  []Run
	Drops DropCounts
	Final bool
}

// Dropped reports whether nothing of the packet survives.
func (v Verdict) Dropped() bool { return !v.Whole && len(v.Keep) == 0 }

type segRecord struct {
	finPs int64 // end of serialization, picoseconds
	wire  int64 // wire bytes
}

type pendingEntry struct {
	due    time.Duration
	handle uint64
	keep   []Run // nil for a whole packet
	idx    int   // index of the run in keep
	final  bool
}

// Link models one direction of an emulated link. Create it with New. It is
// not safe for concurrent use.
type Link struct {
	cfg         Config
	overhead    int
	psPerByte   float64 // serialization time per wire byte, 0 if unlimited
	maxLateness time.Duration
	maxPending  int

	loss    LossProcess
	lossRNG *rand.Rand
	jitRNG  *rand.Rand
	reorRNG *rand.Rand
	bucket  bucket        // the policer's tokens
	step    int           // the next rate step of the schedule
	crossAt time.Duration // when the next cross-traffic packet arrives

	lastNow  time.Duration
	freeAtPs int64         // virtual "link free at" clock, picoseconds
	lastDue  time.Duration // due times never go backwards

	segs        ring[segRecord] // segments not yet serialized (the queue)
	queuedBytes int64
	queuedSegs  int

	pending     ring[pendingEntry] // in due order
	late        ring[pendingEntry] // held back by Reorder, in due order
	pendingPkts int

	st        Stats
	hist      latencyHist   // lateness
	waitHist  latencyHist   // the part of it spent behind earlier writes
	behindEnd time.Duration // the end of the time counted in Stats.Behind so far
}

// New validates c and returns a Link in its initial state (idle link,
// empty queue, no pending packets).
func New(c Config) (*Link, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	l := &Link{
		cfg:         c,
		overhead:    c.overhead(),
		maxLateness: c.MaxLateness,
		maxPending:  c.MaxPending,
		lossRNG:     rand.New(rand.NewPCG(uint64(c.Seed), 0x6c6f7373)), // "loss"
		jitRNG:      rand.New(rand.NewPCG(uint64(c.Seed), 0x6a697474)), // "jitt"
		reorRNG:     rand.New(rand.NewPCG(uint64(c.Seed), 0x72656f72)), // "reor"
		bucket:      bucket{tokens: float64(c.Policer.Burst)},
	}
	if c.RateBps > 0 {
		l.psPerByte = 8e12 / c.RateBps
	}
	if l.maxLateness == 0 {
		l.maxLateness = DefaultMaxLateness
	}
	if l.maxPending == 0 {
		l.maxPending = DefaultMaxPending
	}
	if c.Loss != nil {
		l.loss = c.Loss.Start()
	}
	return l, nil
}

// Config returns the configuration the Link was created with.
func (l *Link) Config() Config { return l.cfg }

// Pending returns the number of accepted packets not yet fully popped.
func (l *Link) Pending() int { return l.pendingPkts }

// serialize queues one accepted segment of wire bytes at the bottleneck
// and returns when its last bit leaves (ps).
func (l *Link) serialize(nowPs, wire int64) int64 {
	start := max(nowPs, l.freeAtPs)
	fin := start + int64(math.Round(float64(wire)*l.psPerByte))
	l.freeAtPs = fin
	l.segs.push(segRecord{finPs: fin, wire: wire})
	l.queuedBytes += wire
	l.queuedSegs++
	l.st.QueuePeakBytes = max(l.st.QueuePeakBytes, l.queuedBytes)
	l.st.QueuePeakPackets = max(l.st.QueuePeakPackets, l.queuedSegs)
	return fin
}

// Enqueue offers a packet that arrived at now and returns its verdict. It
// decides overload, loss and queue drops per segment and, for what
// survives, computes the due times and queues it for PopDue under handle,
// an opaque id for the data plane's buffer. now must not go backwards (a
// smaller now is treated as the previous one). On the whole-packet path it
// does not allocate; a partial verdict allocates its Keep slice.
//
// Times are tracked in picoseconds internally, which bounds now to about
// 106 days from the epoch.
func (l *Link) Enqueue(now time.Duration, p Packet, handle uint64) Verdict {
	if now < l.lastNow {
		now = l.lastNow
	}
	l.lastNow = now
	nseg := p.NumSegments()

	var v Verdict
	if l.pendingPkts >= l.maxPending {
		v.Drops.Overload = nseg
		l.st.DropsOverload += int64(nseg)
		return v
	}

	nowPs := int64(now) * 1000
	limited := l.psPerByte > 0
	if limited {
		l.reschedule(now)
		if l.cfg.Cross.Enabled() {
			l.cross(now)
		}
		l.drain(nowPs)
	}

	if len(l.cfg.Outages) > 0 && l.inOutage(now) {
		v.Drops.Loss = nseg
		l.st.DropsLoss += int64(nseg)
		return v
	}

	runStart := -1 // first segment of the open run, -1 if none
	var runFinPs int64
	var accepted int
	for i := 0; i < nseg; i++ {
		wire := int64(p.segIP(i) + l.overhead)
		if l.loss != nil && l.loss.Lost(l.lossRNG) {
			v.Drops.Loss++
		} else if l.cfg.Policer.Enabled() && !l.bucket.take(l.cfg.Policer, now, wire) {
			v.Drops.Policer++
		} else if limited && l.queueFull(wire) {
			v.Drops.Queue++
		} else {
			fin := nowPs
			if limited {
				fin = l.serialize(nowPs, wire)
			}
			if runStart < 0 {
				runStart = i
			}
			runFinPs = fin
			accepted++
			l.st.Bytes += wire
			continue
		}
		// Segment i dropped: close the open run, if any.
		if runStart >= 0 {
			v.Keep = append(v.Keep, Run{First: runStart, Count: i - runStart, Due: l.due(runFinPs)})
			runStart = -1
		}
	}
	dropped := v.Drops.Total()
	l.st.DropsLoss += int64(v.Drops.Loss)
	l.st.DropsQueue += int64(v.Drops.Queue)
	l.st.DropsPolicer += int64(v.Drops.Policer)
	if accepted == 0 {
		return v
	}
	l.st.Packets++
	l.st.Segments += int64(accepted)
	l.pendingPkts++
	if runStart >= 0 && dropped > 0 {
		v.Keep = append(v.Keep, Run{First: runStart, Count: nseg - runStart, Due: l.due(runFinPs)})
	}
	return l.hold(v, handle, dropped == 0, runFinPs)
}

// hold queues what survives of an accepted packet for PopDue: whole, due
// when its last segment leaves, or its runs. A held-back packet
// (Reorder) goes, all its runs, to the late ring: each ring stays in due
// order, and the runs of one handle stay in order.
func (l *Link) hold(v Verdict, handle uint64, whole bool, finPs int64) Verdict {
	q, extra := &l.pending, time.Duration(0)
	if l.held() {
		q, extra = &l.late, l.cfg.Reorder.Extra
		l.st.Reordered++
	}
	if whole {
		v.Whole = true
		v.Due = l.due(finPs) + extra
		q.push(pendingEntry{due: v.Due, handle: handle, final: true})
		return v
	}
	for i := range v.Keep {
		v.Keep[i].Due += extra
		q.push(pendingEntry{due: v.Keep[i].Due, handle: handle, keep: v.Keep, idx: i, final: i == len(v.Keep)-1})
	}
	v.Due = v.Keep[len(v.Keep)-1].Due
	return v
}

// drain removes from the queue the segments whose serialization has
// finished at nowPs.
func (l *Link) drain(nowPs int64) {
	for l.segs.len() > 0 {
		s := l.segs.front()
		if s.finPs > nowPs {
			return
		}
		l.queuedBytes -= s.wire
		l.queuedSegs--
		l.segs.pop()
	}
}

// queueFull reports whether accepting a segment of wire bytes would exceed
// the queue limit.
func (l *Link) queueFull(wire int64) bool {
	switch {
	case l.cfg.QueueBytes > 0:
		return l.queuedBytes+wire > l.cfg.QueueBytes
	case l.cfg.QueuePackets > 0:
		return l.queuedSegs+1 > l.cfg.QueuePackets
	}
	return false
}

// due turns a serialization finish time into a due time: rounded up to the
// nanosecond, plus delay and jitter, never before the previous due time.
func (l *Link) due(finPs int64) time.Duration {
	d := time.Duration((finPs+999)/1000) + l.cfg.Delay
	if l.cfg.Jitter > 0 {
		d += time.Duration(l.jitRNG.Int64N(int64(l.cfg.Jitter) + 1))
	}
	d = max(d, l.lastDue)
	l.lastDue = d
	return d
}

// NextDue returns the due time of the oldest pending packet (or run).
func (l *Link) NextDue() (due time.Duration, ok bool) {
	q := l.front()
	if q.len() == 0 {
		return 0, false
	}
	return q.front().due, true
}

// PopDue removes and returns the oldest pending packet (or run of a split
// packet) if it is due at now (due <= now). See Verdict for what v holds.
// It does not allocate.
func (l *Link) PopDue(now time.Duration) (handle uint64, v Verdict, ok bool) {
	q := l.front()
	if q.len() == 0 || q.front().due > now {
		return 0, Verdict{}, false
	}
	e := q.pop()
	v = Verdict{Due: e.due, Whole: e.keep == nil, Final: e.final}
	if e.keep != nil {
		v.Keep = e.keep[e.idx : e.idx+1 : e.idx+1]
	}
	if e.final {
		l.pendingPkts--
	}
	return e.handle, v, true
}

// Delivered records that something due at due started its write at start.
// prevEnd is when the data plane's previous write ended (0 if none).
// Lateness (start - due, 0 if early) feeds the lateness statistics and
// splits in two: the wait behind the data plane's own earlier writes
// (prevEnd - due, when the writer was still busy at the due time; due
// times are monotonic, so every write since then was for an earlier
// frame) and the slip, the rest (a late wake-up, a descheduled writer).
//
// Which part counts against Config.MaxLateness depends on the link. On a
// rate-limited link the serializer has already spaced the departures, so
// any wait means the data plane is slower than the configured rate: the
// whole lateness counts. On an unlimited link the data plane is the link's
// rate: frames due together leave at its speed, as behind any real
// bottleneck, and only the slip counts (Stats.OverMax).
func (l *Link) Delivered(due, start, prevEnd time.Duration) {
	late := max(start-due, 0)
	wait := min(max(prevEnd-due, 0), late)
	slip := late - wait
	l.hist.add(late)
	l.waitHist.add(wait)
	if l.maxLateness <= 0 {
		return
	}
	if late > l.maxLateness {
		l.st.LateOverMax++
	}
	if slip > l.maxLateness {
		l.st.SlipOverMax++
	}
	counted := late
	if l.psPerByte == 0 {
		counted = slip
	}
	if counted > l.maxLateness {
		// Behind by more than MaxLateness from due+MaxLateness (less the
		// wait on an unlimited link) until start; due times and starts
		// only grow, so the union of these spans grows at its end.
		from := max(start-counted+l.maxLateness, l.behindEnd)
		l.st.Behind += max(start-from, 0)
		l.behindEnd = max(l.behindEnd, start)
	}
}

// Stats returns a snapshot of the counters.
func (l *Link) Stats() Stats {
	s := l.st
	s.Delivered = int64(l.hist.n)
	s.LatenessP50 = l.hist.quantile(0.50)
	s.LatenessP99 = l.hist.quantile(0.99)
	s.LatenessMax = l.hist.max
	s.WaitP50 = l.waitHist.quantile(0.50)
	s.WaitP99 = l.waitHist.quantile(0.99)
	s.WaitMax = l.waitHist.max
	s.OverMax = s.LateOverMax
	if l.psPerByte == 0 {
		s.OverMax = s.SlipOverMax
	}
	s.Overloaded = s.DropsOverload > 0 || s.OverMax > 0
	return s
}
