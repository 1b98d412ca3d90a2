package exporter

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// Limit reasons, the values of the limit label.
var Limits = [...]string{"rwnd", "sndbuf", "cwnd", "app"}

const (
	limRwnd = iota
	limSndbuf
	limCwnd
	limApp
)

// Counters are cumulative totals of one group (or one socket with
// --per-flow).
type Counters struct {
	Busy     float64              // seconds
	Limited  [len(Limits)]float64 // seconds, by Limits
	Sent     float64              // bytes acknowledged by the peer
	Received float64              // bytes received
	Retrans  float64              // retransmitted segments
	Closed   float64              // sockets closed
	// Reorders counts a sender's reordering events (tcpi_reord_seen) and
	// Spurious the retransmissions its peer reported as duplicates
	// (D-SACK, tcpi_dsack_dups): the evidence of a path that reorders.
	Reorders, Spurious float64
}

func (c *Counters) add(d Counters) {
	c.Busy += d.Busy
	for i := range c.Limited {
		c.Limited[i] += d.Limited[i]
	}
	c.Sent += d.Sent
	c.Received += d.Received
	c.Retrans += d.Retrans
	c.Closed += d.Closed
	c.Reorders += d.Reorders
	c.Spurious += d.Spurious
}

// Delta is what one socket did between two views of it dt apart; prev is
// the zero Sock for a socket first seen. Its limits are flows.Judge's:
// the interval split by flows.SplitInterval (the kernel's chrono stats,
// corrected by the evidence of the flight and the RTT), so the exporter
// and flows agree whatever the congestion control.
func Delta(prev, cur flows.Sock, dt time.Duration) Counters {
	var d Counters
	sent := max(cur.BytesAcked-prev.BytesAcked, 0)
	d.Sent = float64(sent)
	d.Received = float64(max(cur.BytesReceived-prev.BytesReceived, 0))
	d.Retrans = float64(max(cur.Retrans-prev.Retrans, 0))
	d.Reorders = float64(max(cur.ReordSeen-prev.ReordSeen, 0))
	d.Spurious = float64(max(cur.DSACKDups-prev.DSACKDups, 0))
	// The busy time is the kernel's, even past dt (a socket first seen
	// brings its whole history); only the split is judged.
	busy := max(cur.Busy-prev.Busy, 0)
	sp := flows.SplitInterval(prev, cur, max(dt, busy))
	d.Busy = busy.Seconds()
	d.Limited[limRwnd] = sp.Rwnd.Seconds()
	d.Limited[limSndbuf] = sp.Sndbuf.Seconds()
	d.Limited[limCwnd] = sp.Cwnd.Seconds()
	if sent > 0 {
		d.Limited[limApp] = sp.App.Seconds()
	}
	return d
}

// Group is a named peer group (--peer-group NAME=CIDR).
type Group struct {
	Name   string
	Prefix netip.Prefix
}

// Other is the group of peers in no named or per-subnet group.
const Other = "other"

// Config is what the exporter tracks and how much it may export.
type Config struct {
	Groups []Group
	Ports  []uint16 // a socket matches if either end has one; none: all
	// TestPorts are longhaul serve's ports (with probes: the ports they
	// dial): a socket with one at either end is test traffic, the
	// exporter's own probes or another prober's test of a serve here,
	// not counted as the host's flows.
	TestPorts []uint16
	MaxSeries int
	PerFlow   bool
}

// groupState is one group's totals and its gauges from the last sample.
type groupState struct {
	Counters
	name     string
	open     int
	minRTT   time.Duration
	lastBusy time.Time // last sample in which the group moved bytes
}

type sockState struct {
	last flows.Sock
	seen time.Time
	gone bool // missing from the last dump; its destroy notification may still come
	// active: it moved data in the last sample it was in (Active).
	active bool
	flow   Counters // with --per-flow
	group  string
	loss   causeWindow
}

// causeWindow follows a sending socket over about causeEvery of samples
// (flows.LossTrack) and keeps the path cause flows' rules named for its
// last such window, and when: longhaul_tcp_flows_cause.
type causeWindow struct {
	track *flows.LossTrack
	base  flows.Sock
	from  time.Time
	cause string
	at    time.Time
}

// causeEvery is how long a socket is followed before its window is
// judged (ten samples at the default --interval of 1 s); its cause is
// shown for two windows after.
const causeEvery = 10 * time.Second

// follow adds a sample of a socket that sent data (prev its previous
// view, pdt before now) and judges the window once it is long enough.
func (c *causeWindow) follow(prev, cur flows.Sock, now time.Time, pdt time.Duration) {
	if c.track == nil {
		c.track, c.base, c.from = flows.NewLossTrack(prev), prev, now.Add(-pdt)
	}
	c.track.Add(cur)
	if now.Sub(c.from) < causeEvery {
		return
	}
	f := flows.Judge(c.base, cur, now.Sub(c.from), flows.Options{Tracks: map[string]*flows.LossTrack{cur.Key(): c.track}})
	c.cause, c.at, c.track = "", now, nil
	if f.Cause != nil {
		c.cause = f.Cause.Name
	}
}

// Tracker folds dumps and destroy notifications into group totals. It is
// pure (the caller supplies the time) and safe for concurrent use.
type Tracker struct {
	mu         sync.Mutex
	cfg        Config
	named      []Group // longest prefix first
	maxDynamic int
	socks      map[uint64]*sockState
	groups     map[string]*groupState
	subnets    map[netip.Prefix]*groupState // the dynamic groups, by subnet
	dynamic    int
	verdicts   map[string]int
	// tomb holds sockets closed since the last sample: a dump taken
	// before the close but folded after it must not count them again.
	tomb map[uint64]bool
	pend []pending // reused by Sample
	last time.Time
	gap  time.Duration // between the last two samples
	self SelfStats
}

// SelfStats are the exporter's own counters.
type SelfStats struct {
	Samples        float64 // samples folded: full dumps and lookups
	FullDumps      float64 // full dumps among them
	ClosesNotified float64 // destroy notifications folded
	ClosesMissed   float64 // sockets gone with no notification (their last interval is lost)
	Overruns       float64 // times the kernel dropped notifications
	SampleSeconds  float64 // the last dump and fold
	Tracked        int     // sockets tracked
}

// Series every group exports: busy, four limits, sent, received,
// retransmits, reorder events, spurious retransmissions, closed, open
// sockets, min RTT.
const SeriesPerGroup = 13

// reservedSeries is kept under --max-series for the host, verdict and
// self series.
const reservedSeries = 100

// graveTTL and maxGraves bound how long and how many sockets gone from
// the dumps wait for their destroy notification.
const (
	graveTTL  = 10 * time.Minute
	maxGraves = 1 << 16
)

// groupTTL retires a per-subnet group that moved nothing for this long.
const groupTTL = 10 * time.Minute

// promoteBps is the rate a subnet must reach in one sample to get its
// own group.
const promoteBps = 1e6

// NewTracker returns a Tracker for cfg. Named groups beyond what
// cfg.MaxSeries fits still get their series (the CLI refuses such a
// configuration); per-subnet groups only take the room left.
func NewTracker(cfg Config) *Tracker {
	t := &Tracker{cfg: cfg, socks: map[uint64]*sockState{}, groups: map[string]*groupState{}, subnets: map[netip.Prefix]*groupState{},
		verdicts: map[string]int{}, tomb: map[uint64]bool{}}
	t.named = slices.Clone(cfg.Groups)
	slices.SortStableFunc(t.named, func(a, b Group) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	t.maxDynamic = max(MaxGroups(cfg.MaxSeries)-len(cfg.Groups)-1, 0)
	t.groups[Other] = &groupState{name: Other}
	for _, g := range cfg.Groups {
		t.groups[g.Name] = &groupState{name: g.Name}
	}
	return t
}

// MinSeries is the --max-series that fits n groups.
func MinSeries(n int) int { return reservedSeries + n*SeriesPerGroup }

// MaxGroups is how many groups fit under maxSeries.
func MaxGroups(maxSeries int) int { return max(maxSeries-reservedSeries, 0) / SeriesPerGroup }

type pending struct {
	st *sockState
	d  Counters
}

// Sample folds one dump taken at now: every socket of the namespace.
func (t *Tracker) Sample(now time.Time, socks []flows.Sock) { t.sample(now, socks, true) }

// SampleSome folds a lookup of some tracked sockets (those Active
// returned): the others keep their last counters and still count as
// open; only a full dump finds new sockets and those gone.
func (t *Tracker) SampleSome(now time.Time, socks []flows.Sock) { t.sample(now, socks, false) }

// Active appends the sockets that moved data in the last sample they
// were in: what SampleSome needs looked up.
func (t *Tracker) Active(out []flows.Sock) []flows.Sock {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.socks {
		if st.active && !st.gone {
			out = append(out, st.last)
		}
	}
	return out
}

// Tracked is how many sockets the tracker follows.
func (t *Tracker) Tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.socks)
}

func (t *Tracker) sample(now time.Time, socks []flows.Sock, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.self.Samples++
	first := t.last.IsZero()
	dt := now.Sub(t.last)
	if full {
		t.self.FullDumps++
		for _, st := range t.socks {
			st.gone = true // until this dump shows it
		}
	}
	clear(t.verdicts)
	moved := t.pend[:0]
	bySubnet := map[netip.Prefix]float64{}
	for i := range socks {
		s := &socks[i]
		if !t.match(*s) || t.tomb[s.Cookie] {
			continue
		}
		st, ok := t.socks[s.Cookie]
		if !ok {
			st = &sockState{}
			t.socks[s.Cookie] = st
		}
		prev, pdt := st.last, now.Sub(st.seen)
		if !ok {
			prev, pdt = flows.Sock{}, dt
		}
		st.last, st.seen, st.gone = *s, now, false
		if first { // baseline: history before the exporter started is not counted
			moved = append(moved, pending{st, Counters{}})
			continue
		}
		d := Delta(prev, *s, pdt)
		st.active = d.Sent+d.Received > 0
		if d.Sent > 0 {
			v := flows.Judge(prev, *s, pdt, flows.Options{})
			t.verdicts[v.Verdict.Verdict]++
			st.loss.follow(prev, *s, now, pdt)
		}
		moved = append(moved, pending{st, d})
		if d.Sent+d.Received > 0 && !t.isNamed(s.Remote.Addr()) {
			bySubnet[Subnet(s.Remote.Addr())] += d.Sent + d.Received
		}
	}
	if full {
		t.bury(now)
	}
	t.retire(now)
	t.promote(now, bySubnet, dt)
	t.fold(now, moved)
	clear(moved) // no pointers kept to sockets that may go
	t.pend = moved[:0]
	t.self.Tracked = len(t.socks)
	t.last, t.gap = now, dt
	clear(t.tomb)
}

// bury forgets sockets gone from the dumps with no destroy notification
// for graveTTL, or the oldest beyond maxGraves: their last interval is
// lost. Until then a late notification (the kernel sends it when the
// socket is freed, which can be long after it left the tables if the
// application keeps its descriptor) still finds their last counters, and
// is not taken for a new socket's whole history.
func (t *Tracker) bury(now time.Time) {
	var graves []*sockState
	for c, st := range t.socks {
		switch {
		case !st.gone:
		case now.Sub(st.seen) > graveTTL:
			delete(t.socks, c)
			t.self.ClosesMissed++
		default:
			graves = append(graves, st)
		}
	}
	if len(graves) <= maxGraves {
		return
	}
	slices.SortFunc(graves, func(a, b *sockState) int { return a.seen.Compare(b.seen) })
	for _, st := range graves[:len(graves)-maxGraves] {
		delete(t.socks, st.last.Cookie)
		t.self.ClosesMissed++
	}
}

// retire ends per-subnet groups that moved nothing for groupTTL.
func (t *Tracker) retire(now time.Time) {
	for p, g := range t.subnets {
		if now.Sub(g.lastBusy) > groupTTL {
			delete(t.groups, g.name)
			delete(t.subnets, p)
			t.dynamic--
		}
	}
}

// promote gives the busiest subnets of this sample their own groups
// while there is room under the series cap.
func (t *Tracker) promote(now time.Time, bySubnet map[netip.Prefix]float64, dt time.Duration) {
	if t.dynamic >= t.maxDynamic || dt <= 0 {
		return
	}
	type cand struct {
		p     netip.Prefix
		bytes float64
	}
	var cs []cand
	for p, b := range bySubnet {
		if _, ok := t.subnets[p]; !ok && b*8/dt.Seconds() >= promoteBps {
			cs = append(cs, cand{p, b})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.bytes != b.bytes {
			return cmp.Compare(b.bytes, a.bytes)
		}
		return a.p.Addr().Compare(b.p.Addr())
	})
	for _, c := range cs[:min(len(cs), t.maxDynamic-t.dynamic)] {
		g := &groupState{name: c.p.String(), lastBusy: now}
		t.groups[g.name], t.subnets[c.p] = g, g
		t.dynamic++
	}
}

// fold adds the sample's deltas to the groups and recomputes the gauges
// over every socket still open (a partial sample looks up only some).
func (t *Tracker) fold(now time.Time, seen []pending) {
	for _, p := range seen {
		g := t.groupFor(p.st.last.Remote.Addr())
		g.add(p.d)
		if p.d.Sent+p.d.Received > 0 {
			g.lastBusy = now
		}
		p.st.group = g.name
		if t.cfg.PerFlow {
			p.st.flow.add(p.d)
		}
	}
	for _, g := range t.groups {
		g.open, g.minRTT = 0, 0
	}
	for _, st := range t.socks {
		if st.gone {
			continue
		}
		g := t.groups[st.group]
		if g == nil { // its per-subnet group retired
			g = t.groupFor(st.last.Remote.Addr())
			st.group = g.name
		}
		g.open++
		if m := st.last.MinRTT; m > 0 && (g.minRTT == 0 || m < g.minRTT) {
			g.minRTT = m
		}
	}
}

// Closed folds a destroy notification: the socket's final tcp_info.
func (t *Tracker) Closed(now time.Time, s flows.Sock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last.IsZero() || !t.match(s) {
		return
	}
	t.self.ClosesNotified++
	prev, dt := flows.Sock{}, now.Sub(t.last)
	if st, ok := t.socks[s.Cookie]; ok {
		prev, dt = st.last, now.Sub(st.seen)
		if st.gone { // a late notification: the socket sent at most one interval more
			dt = min(dt, t.gap)
		}
		delete(t.socks, s.Cookie)
	}
	t.tomb[s.Cookie] = true
	d := Delta(prev, s, dt)
	d.Closed = 1
	g := t.groupFor(s.Remote.Addr())
	g.add(d)
	if d.Sent+d.Received > 0 {
		g.lastBusy = now
	}
	t.self.Tracked = len(t.socks)
}

// SetSampleCost records how long the last dump and fold took.
func (t *Tracker) SetSampleCost(d time.Duration) {
	t.mu.Lock()
	t.self.SampleSeconds = d.Seconds()
	t.mu.Unlock()
}

// Overrun counts destroy notifications the kernel dropped.
func (t *Tracker) Overrun() {
	t.mu.Lock()
	t.self.Overruns++
	t.mu.Unlock()
}
