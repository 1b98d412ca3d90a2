package tcpflow

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
)

// Analyzer follows every TCP flow in a stream of packets.
type Analyzer struct {
	// cache is a direct-mapped cache of the flow index by port hash: a
	// map lookup hashes two netip.AddrPorts (64 bytes), which cost 40% of
	// the per-packet work when packets alternate between flows and
	// directions. First in the struct: its entries then sit on cache
	// lines of their own.
	cache [cacheSize]cacheEntry
	opts  Options
	flows []*Flow
	index map[key]ref
	// pending holds connection attempts seen only as a SYN (pending.go);
	// nextID numbers connections in the order their first packet came.
	pending pending
	nextID  int
	seg     capture.Segment
	opt     capture.Options
	clock   clock
	// bulkSegs counts the segments Flow.bulk took (the tests read it).
	bulkSegs int64
	stats    Stats
	// listed holds the reports of flows no longer followed, at most
	// maxFlows, the rest counted in summary (evict.go).
	listed  byBytes
	pinned  *FlowReport // Options.SeriesFlow's report
	summary Summary
	// pairRTT holds the path's round trip between two hosts across
	// their connections (pairrtt.go).
	pairRTT map[hostPair]int64
}

const (
	cacheBits = 8
	cacheSize = 1 << cacheBits
)

// cacheEntry maps a flow's key to its ref in 24 bytes: the key is the
// flow's own (Flow.Addr, dir's address first), with the ports and an
// IPv4 flow's addresses as numbers that compare in one instruction each
// (two netip.Addrs compare in six).
type cacheEntry struct {
	f      *Flow
	addrs4 uint64 // capture.Segment.Addrs4
	ports  uint32 // source port in the high half
	dir    uint8
}

func (c *cacheEntry) set(k key, r ref) {
	*c = cacheEntry{r.f, addrs4(k.src.Addr(), k.dst.Addr()), ports(k.src.Port(), k.dst.Port()), r.dir}
}

func (c *cacheEntry) ref() ref { return ref{c.f, c.dir} }

// holds reports whether the entry is the flow of s, whose ports are p,
// without building the key (two netip.AddrPorts) to compare: an IPv4
// flow by the numbers alone.
func (c *cacheEntry) holds(s *capture.Segment, p uint32) bool {
	if c.f == nil || c.ports != p || c.addrs4 != s.Addrs4 {
		return false
	}
	return s.Addrs4 != 0 || (c.f.Addr[c.dir&1].Addr() == s.Src && c.f.Addr[c.dir&1^1].Addr() == s.Dst)
}

// is reports whether the entry holds key k.
func (c *cacheEntry) is(k key) bool {
	return c.f != nil && c.f.Addr[c.dir&1] == k.src && c.f.Addr[c.dir&1^1] == k.dst
}

func ports(src, dst uint16) uint32 { return uint32(src)<<16 | uint32(dst) }

// addrs4 is capture.Segment.Addrs4 for a packet from src to dst.
func addrs4(src, dst netip.Addr) uint64 {
	if !src.Is4() || !dst.Is4() {
		return 0
	}
	a, b := src.As4(), dst.As4()
	return uint64(binary.BigEndian.Uint32(a[:]))<<32 | uint64(binary.BigEndian.Uint32(b[:]))
}

// cacheSlot is the cache entry for ports p (ports): Fibonacci hashing,
// the product's top bits.
func cacheSlot(p uint32) int { return int(p * 0x9e3779b1 >> (32 - cacheBits)) }

// Stats counts what the analyzer saw and skipped.
type Stats struct {
	Packets    int64            `json:"packets"`
	TCPPackets int64            `json:"tcp_packets"`
	Skipped    map[string]int64 `json:"skipped,omitempty"`
	BadOptions int64            `json:"bad_options,omitempty"`
	skipped    [capture.NumResults]int64
}

// New returns an analyzer.
func New(opts Options) *Analyzer {
	return &Analyzer{opts: opts, index: make(map[key]ref), pending: newPending()}
}

// segment handles one decoded packet captured at ts (ns since the epoch)
// with its TCP options parsed into o (badOpt: they were malformed), and,
// for a SYN, their layout (Options.SetLayout) still to read.
// (Stats.Packets is counted at Finish: TCPPackets and those skipped.)
func (a *Analyzer) segment(s *capture.Segment, o *capture.Options, badOpt bool, res capture.Result, ts int64) {
	if res != capture.OK {
		a.stats.skipped[res]++
		return
	}
	a.stats.TCPPackets++
	t := a.clock.fix(ts)
	if s.Flags&capture.FlagSYN != 0 {
		o.SetLayout(s.Options)
	}
	if badOpt {
		a.stats.BadOptions++
	}
	var r ref
	p := ports(s.SrcPort, s.DstPort)
	if c := &a.cache[cacheSlot(p)]; c.holds(s, p) {
		r = c.ref()
	} else {
		k := key{netip.AddrPortFrom(s.Src, s.SrcPort), netip.AddrPortFrom(s.Dst, s.DstPort)}
		var ok bool
		r, ok = a.index[k]
		if !ok {
			if r, ok = a.takePending(k); !ok {
				if pureSYN(s) {
					a.nextID++
					a.pending.put(k, hold(s, o, t, a.nextID))
					return
				}
				r = a.newFlow(k, s, t)
			}
		}
		c.set(k, r)
	}
	// A new SYN on the ports of a finished flow (or with another ISN) is
	// a new connection.
	if s.Flags&(capture.FlagSYN|capture.FlagACK) == capture.FlagSYN && r.f.packets > 0 {
		d := &r.f.dir[r.dir]
		if r.f.closed() || (d.synSeen && d.base != s.Seq+1) || (!d.synSeen && d.segs > 0) {
			r = a.newFlow(key{netip.AddrPortFrom(s.Src, s.SrcPort), netip.AddrPortFrom(s.Dst, s.DstPort)}, s, t)
		}
	}
	if r.f.bulk(int(r.dir), s, o, t) {
		a.bulkSegs++
	} else {
		r.f.packet(int(r.dir), s, o, t)
	}
}

func (a *Analyzer) newFlow(k key, s *capture.Segment, t int64) ref {
	a.nextID++
	return a.newFlowID(k, s, t, a.nextID)
}

func (a *Analyzer) newFlowID(k key, s *capture.Segment, t int64, id int) ref {
	a.makeRoom()
	f := newFlow(id, s, t, &a.opts)
	f.clk = &a.clock
	a.flows = append(a.flows, f)
	a.index[k] = ref{f, 0}
	a.index[key{k.dst, k.src}] = ref{f, 1}
	// A new connection on the ports of an old one: the cache must not
	// hand out the old flow in either direction.
	a.cache[cacheSlot(ports(s.SrcPort, s.DstPort))].set(k, ref{f, 0})
	if c := &a.cache[cacheSlot(ports(s.DstPort, s.SrcPort))]; c.is(key{k.dst, k.src}) {
		c.f, c.dir = f, 1
	}
	return ref{f, 0}
}

// Analysis is the result of reading a capture.
type Analysis struct {
	Format   string        `json:"format"`
	Stats    Stats         `json:"stats"`
	Clock    ClockReport   `json:"clock"`
	Duration float64       `json:"duration_s"`
	Flows    []*FlowReport `json:"flows"`
	// UnansweredSYNs counts connection attempts seen only as a SYN that
	// are not listed in Flows: there were more than 10,000 of them (a
	// port scan or a SYN flood).
	UnansweredSYNs int64 `json:"unanswered_syns,omitempty"`
	// Summarised counts the flows judged but not listed: more than
	// Options.MaxFlows connections, these with the fewest bytes.
	Summarised *Summary `json:"summarised,omitempty"`
	// Error is set when the file ended badly: the flows are those read
	// before it.
	Error string `json:"error,omitempty"`
}

// Finish judges every flow.
func (a *Analyzer) Finish() *Analysis {
	an := &Analysis{Stats: a.stats, Clock: a.clock.report()}
	an.Stats.Skipped = map[string]int64{}
	an.Stats.Packets = a.stats.TCPPackets
	for r, n := range a.stats.skipped {
		an.Stats.Packets += n
		if n > 0 {
			an.Stats.Skipped[capture.Result(r).String()] = n
		}
	}
	an.Duration = time.Duration(a.clock.last).Seconds()
	an.UnansweredSYNs = a.finishPending()
	for _, f := range a.flows {
		a.notePairRTT(f)
	}
	for _, f := range a.flows {
		a.keep(a.judge(f))
	}
	a.flows = nil
	if a.pinned != nil {
		a.listed = append(a.listed, a.pinned)
	}
	an.Flows = slices.SortedFunc(slices.Values(a.listed), func(x, y *FlowReport) int { return x.ID - y.ID })
	if an.Flows == nil {
		an.Flows = []*FlowReport{}
	}
	if a.summary.Flows > 0 || a.summary.Evicted > 0 {
		s := a.summary
		an.Summarised = &s
	}
	return an
}

// Analyze reads a whole capture. On a truncated or corrupt file it
// returns the analysis of the packets before the damage together with
// the error (a *capture.CorruptError).
func Analyze(r io.Reader, opts Options) (*Analysis, error) {
	rd, err := capture.Open(r)
	if err != nil {
		return nil, err
	}
	a := New(opts)
	a.clock.floor = rd.Unit()
	err = rd.Guard(func() error { return a.run(rd) })
	an := a.Finish()
	an.Format = rd.Format()
	if errors.Is(err, io.EOF) {
		return an, nil
	}
	an.Error = err.Error()
	return an, err
}

// clock sanitizes capture timestamps: fix gives ns since the first TCP
// packet's time (base).
type clock struct {
	base      int64
	n         int64
	last      int64
	offset    int64
	backwards int64
	steps     int64
	equal     int64
	// minDelta is the least step forward, math.MaxInt64 before one
	// (least reads it).
	minDelta int64
	div      int64 // largest power of ten (ns) dividing every timestamp
	// floor is the file's own unit (capture.Reader.Unit; 1 when not
	// set): div never falls below it, so it is not tested again once
	// there.
	floor int64
}

const clockStep = int64(time.Hour)

func (c *clock) fix(ts int64) int64 {
	if c.n == 0 {
		c.base, c.n, c.last, c.div = ts, 1, 0, 1e9
		c.minDelta, c.floor = math.MaxInt64, max(c.floor, 1)
		return 0
	}
	t := ts - c.base + c.offset
	c.n++
	d := t - c.last
	if d <= 0 || d > clockStep {
		return c.odd(t, d)
	}
	c.minDelta = min(c.minDelta, d)
	c.last = t
	if c.div > c.floor {
		c.unit(t)
	}
	return t
}

// odd is fix for a timestamp d from the last: the same, earlier, or a
// step of more than an hour either way.
func (c *clock) odd(t, d int64) int64 {
	if d > clockStep || d < -clockStep {
		// An epoch outlier or a clock step: cut the jump out.
		c.offset -= d
		c.steps++
		return c.last
	}
	if d < 0 {
		c.backwards++
		return c.last
	}
	c.equal++
	c.last = t
	c.unit(t)
	return t
}

// unit lowers div until it divides t's time since base.
func (c *clock) unit(t int64) {
	for c.div > c.floor && !multipleOf(t-c.offset, c.div) {
		c.div /= 10
	}
}

// least is the least step forward, 0 before one.
func (c *clock) least() int64 {
	if c.minDelta == math.MaxInt64 {
		return 0
	}
	return c.minDelta
}

// multipleOf reports whether x is a multiple of div, a power of ten up
// to 1e9: by constant divisors, which compile to multiplications (a
// division by a variable per packet showed in profiles).
func multipleOf(x, div int64) bool {
	switch div {
	case 1e9:
		return x%1e9 == 0
	case 1e8:
		return x%1e8 == 0
	case 1e7:
		return x%1e7 == 0
	case 1e6:
		return x%1e6 == 0
	case 1e5:
		return x%1e5 == 0
	case 1e4:
		return x%1e4 == 0
	case 1e3:
		return x%1e3 == 0
	case 100:
		return x%100 == 0
	case 10:
		return x%10 == 0
	}
	return x%div == 0
}

// ClockReport describes the capture's clock.
type ClockReport struct {
	// TickSeconds is the capture clock's granularity when it is coarse
	// (1 ms or more), else 0.
	TickSeconds float64 `json:"tick_s,omitempty"`
	Backwards   int64   `json:"backwards,omitempty"`
	Steps       int64   `json:"steps,omitempty"`
}

// tick returns the clock granularity if it is coarse (>= 1 ms).
func (c *clock) tick() time.Duration {
	if c.n < 20 {
		return 0
	}
	if c.div >= int64(time.Millisecond) {
		return time.Duration(c.div)
	}
	if c.equal*2 >= c.n && c.least() >= int64(time.Millisecond) {
		return time.Duration(c.least())
	}
	return 0
}

func (c *clock) report() ClockReport {
	return ClockReport{TickSeconds: c.tick().Seconds(), Backwards: c.backwards, Steps: c.steps}
}

// run reads, decodes and follows flows in one loop: each record is
// decoded in place (its bytes alias the reader's buffer, or the mapped
// file) and handed to the flow at once, so nothing is copied or
// allocated per packet. It returns the reader's final error (io.EOF at
// a clean end).
func (a *Analyzer) run(rd *capture.Reader) error {
	s, o := &a.seg, &a.opt
	for {
		ts, res, badOpt, err := rd.NextSegment(s, o)
		if err != nil {
			return err
		}
		a.segment(s, o, badOpt, res, ts)
	}
}
