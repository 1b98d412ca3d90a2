package exporter

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/flows"
)

var t0 = time.Unix(1_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// sk is a sending socket to remote with cumulative counters.
func sk(cookie uint64, remote string, acked int64, busy, rwnd, sndbuf float64) flows.Sock {
	return flows.Sock{Cookie: cookie, Local: netip.MustParseAddrPort("198.18.0.1:40000"),
		Remote: netip.MustParseAddrPort(remote), State: "ESTABLISHED", MSS: 1448, Cwnd: 1 << 20, Ssthresh: 1 << 19,
		BytesAcked: acked, Busy: sec(busy), RwndLimited: sec(rwnd), SndbufLimited: sec(sndbuf),
		RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond, WindowScale: true}
}

func group(t *testing.T, tr *Tracker, name string) GroupView {
	t.Helper()
	for _, g := range tr.View(0).Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in %v", name, tr.View(0).Groups)
	return GroupView{}
}

func cfg(groups ...Group) Config { return Config{Groups: groups, MaxSeries: 2000} }

const peer = "198.18.0.2:5201"

// countCase is a sequence of samples and closes and the totals of the
// group "far" after it.
type countCase struct {
	name  string
	steps func(tr *Tracker)
	want  Counters
}

func countCases() []countCase {
	return []countCase{
		{
			name: "history before the first sample is a baseline",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), []flows.Sock{sk(1, peer, 100e6, 50, 40, 0)})
				tr.Sample(at(1), []flows.Sock{sk(1, peer, 110e6, 51, 40.8, 0)})
			},
			want: Counters{Busy: 1, Limited: [4]float64{0.8, 0, 0.2, 0}, Sent: 10e6},
		},
		{
			name: "app-limited only while sending",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0), sk(2, peer, 0, 0, 0, 0)})
				tr.Sample(at(2), []flows.Sock{sk(1, peer, 1e6, 0.5, 0, 0.1), sk(2, peer, 0, 0, 0, 0)})
			},
			want: Counters{Busy: 0.5, Limited: [4]float64{0, 0.1, 0.4, 1.5}, Sent: 1e6},
		},
		{
			name: "a socket born and closed between samples counts whole",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), nil)
				tr.Closed(at(0.5), sk(3, peer, 5e6, 0.4, 0.3, 0))
				tr.Sample(at(1), nil)
			},
			want: Counters{Busy: 0.4, Limited: [4]float64{0.3, 0, 0.1, 0.1}, Sent: 5e6, Closed: 1},
		},
		{
			name: "a closed socket adds what it did since the last sample",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0)})
				tr.Sample(at(1), []flows.Sock{sk(1, peer, 1e6, 1, 1, 0)})
				tr.Closed(at(1.5), sk(1, peer, 1.5e6, 1.5, 1.5, 0))
				tr.Sample(at(2), nil)
			},
			want: Counters{Busy: 1.5, Limited: [4]float64{1.5, 0, 0, 0}, Sent: 1.5e6, Closed: 1},
		},
		{
			name: "a dump taken before a close and folded after it counts nothing twice",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), nil)
				tr.Closed(at(0.9), sk(4, peer, 2e6, 0.8, 0.8, 0))
				tr.Sample(at(1), []flows.Sock{sk(4, peer, 1.9e6, 0.75, 0.75, 0)})
			},
			want: Counters{Busy: 0.8, Limited: [4]float64{0.8, 0, 0, 0.1}, Sent: 2e6, Closed: 1},
		},
		{
			name: "a socket gone with no notification keeps what was counted",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0)})
				tr.Sample(at(1), []flows.Sock{sk(1, peer, 1e6, 1, 0, 0)})
				tr.Sample(at(2), nil)
				tr.Sample(at(3), nil)
			},
			want: Counters{Busy: 1, Limited: [4]float64{0, 0, 1, 0}, Sent: 1e6},
		},
		{
			name: "a late notification adds only what the socket did since it was last seen",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0)})
				tr.Sample(at(1), []flows.Sock{sk(1, peer, 1e6, 1, 1, 0)})
				tr.Sample(at(2), nil)
				tr.Sample(at(3), nil)
				tr.Closed(at(300), sk(1, peer, 1.2e6, 1.1, 1.1, 0))
			},
			want: Counters{Busy: 1.1, Limited: [4]float64{1.1, 0, 0, 0.9}, Sent: 1.2e6, Closed: 1},
		},
		{
			name: "other ports are not counted",
			steps: func(tr *Tracker) {
				tr.Sample(at(0), nil)
				tr.Sample(at(1), []flows.Sock{sk(1, "198.18.0.2:22", 1e6, 1, 1, 0)})
				tr.Closed(at(1.5), sk(2, "198.18.0.2:22", 1e6, 1, 1, 0))
			},
		},
	}
}

func TestTrackerCounts(t *testing.T) {
	far := Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/24")}
	tests := countCases()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(far)
			c.Ports = []uint16{5201}
			tr := NewTracker(c)
			tc.steps(tr)
			got := group(t, tr, "far").Counters
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestTrackerGroups(t *testing.T) {
	named := []Group{
		{Name: "lab", Prefix: netip.MustParsePrefix("198.18.0.0/15")},
		{Name: "far", Prefix: netip.MustParsePrefix("198.18.7.0/24")},
	}
	tr := NewTracker(Config{Groups: named, MaxSeries: MinSeries(len(named) + 1 + 2)}) // room for 2 subnets
	mbit := func(cookie uint64, remote string, mbps float64) flows.Sock {
		return sk(cookie, remote, int64(mbps*1e6/8), 1, 0, 0)
	}
	tr.Sample(at(0), nil)
	tr.Sample(at(1), []flows.Sock{
		mbit(1, "198.18.7.9:1", 5),        // far: longest prefix
		mbit(2, "198.19.1.1:1", 5),        // lab
		mbit(3, "203.0.113.5:1", 50),      // a busy subnet
		mbit(4, "203.0.113.77:1", 50),     // the same /24
		mbit(5, "[2001:db8:1:2::1]:1", 9), // a busy /48
		mbit(6, "192.0.2.1:1", 2),         // busy, but no room left
		mbit(7, "100.64.0.1:1", 0.5),      // too slow for a group
	})
	var got []string
	for _, g := range tr.View(0).Groups {
		got = append(got, fmt.Sprintf("%s %d %.0f", g.Name, g.Open, g.Sent))
	}
	want := []string{"2001:db8:1::/48 1 1125000", "203.0.113.0/24 2 12500000", "far 1 625000", "lab 1 625000", "other 2 312500"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups after one sample (-want +got)\n%s", diff)
	}
	// Ten idle minutes later the subnets are retired and their slots reused.
	tr.Sample(at(2+groupTTL.Seconds()), []flows.Sock{mbit(6, "192.0.2.1:1", 2)})
	tr.Sample(at(3+groupTTL.Seconds()), []flows.Sock{mbit(6, "192.0.2.1:1", 4)})
	got = nil
	for _, g := range tr.View(0).Groups {
		got = append(got, g.Name)
	}
	if diff := cmp.Diff([]string{"192.0.2.0/24", "far", "lab", "other"}, got); diff != "" {
		t.Errorf("groups after the subnets idled (-want +got)\n%s", diff)
	}
}

// A socket gone from the dumps with no notification is forgotten after
// graveTTL and counted as a missed close; a notification after that
// counts as a new socket.
func TestTrackerMissedClose(t *testing.T) {
	tr := NewTracker(cfg())
	tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0)})
	tr.Sample(at(1), nil)
	tr.Sample(at(graveTTL.Seconds()-1), nil)
	if v := tr.View(0); v.Self.ClosesMissed != 0 || v.Self.Tracked != 1 {
		t.Fatalf("within graveTTL: missed %v, tracked %d; want 0, 1", v.Self.ClosesMissed, v.Self.Tracked)
	}
	tr.Sample(at(2+graveTTL.Seconds()), nil)
	if v := tr.View(0); v.Self.ClosesMissed != 1 || v.Self.Tracked != 0 {
		t.Errorf("after graveTTL: missed %v, tracked %d; want 1, 0", v.Self.ClosesMissed, v.Self.Tracked)
	}
}

// Counters never go down, whatever the order of samples and closes.
func TestTrackerMonotonic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := NewTracker(Config{MaxSeries: MinSeries(4)})
	live := map[uint64]flows.Sock{}
	prev := map[string]Counters{}
	next := uint64(1)
	for step := range 2000 {
		now := at(float64(step) / 10)
		switch r.IntN(4) {
		case 0: // a new socket to one of 20 subnets
			s := sk(next, fmt.Sprintf("10.%d.0.1:443", r.IntN(20)), 0, 0, 0, 0)
			live[next] = s
			next++
		case 1: // a close
			for c, s := range live {
				tr.Closed(now, s)
				delete(live, c)
				break
			}
		default: // traffic, then a sample
			var dump []flows.Sock
			for c, s := range live {
				s.BytesAcked += int64(r.IntN(1e6))
				s.Busy += sec(r.Float64() / 10)
				s.RwndLimited += sec(r.Float64() / 20)
				live[c] = s
				dump = append(dump, s)
			}
			tr.Sample(now, dump)
		}
		for _, g := range tr.View(0).Groups {
			p, ok := prev[g.Name]
			if ok && (g.Busy < p.Busy || g.Sent < p.Sent || g.Closed < p.Closed || g.Limited[limRwnd] < p.Limited[limRwnd]) {
				t.Fatalf("step %d: group %s went down: %+v -> %+v", step, g.Name, p, g.Counters)
			}
			prev[g.Name] = g.Counters
		}
	}
}

// Between full dumps only the active sockets are looked up: an idle one
// keeps counting as open and is not taken for gone, the active one's
// counters go on from its last sample, a socket that starts sending
// between dumps is counted whole at the next dump, and a dump without a
// socket marks it gone.
func TestSampleSome(t *testing.T) {
	far := Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/24")}
	tr := NewTracker(cfg(far))
	idle := func(acked int64, busy float64) flows.Sock {
		s := sk(2, "198.18.0.3:5201", acked, busy, 0, 0)
		s.MinRTT = 20 * time.Millisecond
		return s
	}
	tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0), idle(0, 0)})
	tr.Sample(at(1), []flows.Sock{sk(1, peer, 10e6, 1, 0.5, 0), idle(0, 0)})
	active := tr.Active(nil)
	if len(active) != 1 || active[0].Cookie != 1 {
		t.Fatalf("active %v; want socket 1 only", active)
	}
	tr.SampleSome(at(2), []flows.Sock{sk(1, peer, 20e6, 2, 1, 0)})
	g := group(t, tr, "far")
	if g.Open != 2 || g.MinRTT != 20*time.Millisecond || g.Sent != 20e6 || g.Limited[0] != 1 {
		t.Errorf("after a lookup: open %d, min rtt %v, sent %.0f, rwnd-limited %.1f s; want 2, 20ms, 20e6, 1", g.Open, g.MinRTT, g.Sent, g.Limited[0])
	}
	// Socket 2 sends 5 MB while only socket 1 is looked up.
	tr.SampleSome(at(3), []flows.Sock{sk(1, peer, 20e6, 2, 1, 0)})
	tr.Sample(at(4), []flows.Sock{sk(1, peer, 20e6, 2, 1, 0), idle(5e6, 0.5)})
	if g := group(t, tr, "far"); g.Sent != 25e6 || g.Open != 2 {
		t.Errorf("after the next dump: sent %.0f, open %d; want 25e6 and 2", g.Sent, g.Open)
	}
	tr.Sample(at(5), []flows.Sock{idle(5e6, 0.5)})
	if g := group(t, tr, "far"); g.Open != 1 {
		t.Errorf("a dump without socket 1: open %d; want 1", g.Open)
	}
	if v := tr.View(0).Self; v.Samples != 6 || v.FullDumps != 4 {
		t.Errorf("samples %.0f, full dumps %.0f; want 6 and 4", v.Samples, v.FullDumps)
	}
}

// A bbr sender pinned at its peer's 172 kB window at 50 ms: pacing stops
// it before the window test, so the kernel counts only 30% of its busy
// time rwnd-limited. The tracker counts what flows.Judge says (the
// flight at the window, the RTT at its minimum, nothing lost): the
// window, not the congestion window.
func TestTrackerBBRAtTheWindowIsRwnd(t *testing.T) {
	bbr := func(acked int64, busy, rwnd float64, inflight int64) flows.Sock {
		s := sk(1, peer, acked, busy, rwnd, 0)
		s.CC, s.Cwnd, s.Ssthresh, s.SndWnd, s.Inflight, s.NotSent = "bbr", 370_000, 180_000, 172_672, inflight, 2_000_000
		s.RTT = 50200 * time.Microsecond
		return s
	}
	tr := NewTracker(cfg(Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/15")}))
	tr.Sample(at(0), []flows.Sock{bbr(50e6, 20, 6, 144_800)})
	tr.Sample(at(1), []flows.Sock{bbr(50e6+3_010_000, 21, 6.3, 147_696)})
	g := group(t, tr, "far")
	if g.Limited[limRwnd] < 0.99 || g.Limited[limCwnd] > 0.01 {
		t.Errorf("limits %v (rwnd, sndbuf, cwnd, app); want the whole second rwnd-limited", g.Limited)
	}
	if v := tr.View(0).Verdicts; v["rwnd-limited"] != 1 {
		t.Errorf("verdicts %v; want one rwnd-limited", v)
	}
}

// A connection that trickles (a few kB in flight, both windows and its
// buffer far from full) is busy for the kernel the whole second; the
// tracker counts it as the application's, not the congestion window's.
func TestTrackerTrickleIsApp(t *testing.T) {
	ctl := func(acked int64, busy float64) flows.Sock {
		s := sk(2, peer, acked, busy, 0, 0)
		s.Cwnd, s.SndWnd, s.Inflight, s.Sndbuf, s.WmemQueued = 200_000, 1<<20, 3_000, 87_040, 4_000
		return s
	}
	tr := NewTracker(cfg(Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/15")}))
	tr.Sample(at(0), []flows.Sock{ctl(1e6, 20)})
	tr.Sample(at(1), []flows.Sock{ctl(1e6+20_000, 21)})
	if g := group(t, tr, "far"); g.Limited[limApp] < 0.99 || g.Limited[limCwnd] > 0.01 {
		t.Errorf("limits %v (rwnd, sndbuf, cwnd, app); want the whole second the application's", g.Limited)
	}
}

// The reordering counters add up per group like the others.
func TestTrackerReordering(t *testing.T) {
	far := Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/24")}
	tr := NewTracker(cfg(far))
	a := sk(1, "198.18.0.2:5201", 1e6, 1, 0, 0)
	a.ReordSeen, a.DSACKDups = 4, 1
	tr.Sample(at(0), []flows.Sock{a})
	b := sk(1, "198.18.0.2:5201", 2e6, 2, 0, 0)
	b.ReordSeen, b.DSACKDups = 10, 3
	tr.Sample(at(1), []flows.Sock{b})
	got := group(t, tr, "far").Counters
	if got.Reorders != 6 || got.Spurious != 2 {
		t.Errorf("reorders %v, spurious %v; want 6 and 2 (the growth after the first view, as for the other counters)", got.Reorders, got.Spurious)
	}
}

// Issue 23: the exporter names a sending socket's path cause by flows'
// rules over its last window of samples: random loss (a segment lost in
// some samples, the smoothed RTT at its minimum), under the cause label.
func TestTrackerCause(t *testing.T) {
	far := Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/24")}
	tr := NewTracker(cfg(far))
	s := sk(1, peer, 1e6, 1, 0, 0)
	s.Ssthresh, s.Cwnd, s.CAState = 1<<19, 1<<20, 0
	for i := range 13 {
		s.BytesAcked += 5e6
		s.DataSegsOut += 3453
		s.Busy += sec(1)
		s.DeliveryBps = 45e6
		if i%3 == 1 {
			s.Retrans++
			s.BytesRetrans += 1448
		}
		tr.Sample(at(float64(i)), []flows.Sock{s})
	}
	if got := tr.View(0).Causes; got["random-loss"] != 1 {
		t.Fatalf("causes %v, want one random-loss (verdicts %v)", got, tr.View(0).Verdicts)
	}
	// A clean socket: no cause.
	tr = NewTracker(cfg(far))
	c := sk(2, peer, 1e6, 1, 0, 0)
	for i := range 13 {
		c.BytesAcked += 5e6
		c.Busy += sec(1)
		tr.Sample(at(float64(i)), []flows.Sock{c})
	}
	if got := tr.View(0).Causes; len(got) != 0 {
		t.Errorf("causes %v for a clean socket", got)
	}
}

// TestTrackerSkipsTestTraffic: with probes on, the sockets on serve's
// ports (the exporter's own probes, which dial them, and other probers'
// tests of a serve on this host, which arrive on them) are not the
// host's flows: only the socket to 443 is counted.
func TestTrackerSkipsTestTraffic(t *testing.T) {
	far := Group{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/24")}
	c := cfg(far)
	c.TestPorts = []uint16{9978}
	tr := NewTracker(c)
	incoming := func(s flows.Sock) flows.Sock { s.Local = netip.MustParseAddrPort("198.18.0.1:9978"); return s }
	tr.Sample(at(0), []flows.Sock{sk(1, "198.18.0.2:443", 0, 0, 0, 0), sk(2, "198.18.0.3:9978", 0, 0, 0, 0), incoming(sk(3, "198.18.0.4:50000", 0, 0, 0, 0))})
	tr.Sample(at(1), []flows.Sock{sk(1, "198.18.0.2:443", 1_000_000, 1, 0, 0), sk(2, "198.18.0.3:9978", 50_000_000, 1, 0, 0), incoming(sk(3, "198.18.0.4:50000", 70_000_000, 1, 0, 0))})
	g := group(t, tr, "far")
	if g.Sent != 1_000_000 || g.Open != 1 {
		t.Errorf("far: %.0f bytes sent by %d open sockets, want the 443 socket's 1000000 by 1 (test traffic on 9978 counted)", g.Sent, g.Open)
	}
}
