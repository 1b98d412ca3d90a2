package connlimit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// Connections that send nothing, from many addresses, no longer keep a
// real client out (issue 50: ~130 IPv4 addresses, or 200 IPv6 /64s of
// one /56, each within its per-source cap, locked every test out; such
// connections were never the ones dropped). A network's sources hold
// its share together; a full share, or a full server, drops its oldest
// silent connection for a newcomer (at once: the room is a flood of
// them); a client's connection lasts through its handshake while newer
// ones keep coming, and once proven it is not dropped.
func TestSilentFloodMakesRoom(t *testing.T) {
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}) }
	v6 := func(i int) netip.Addr { // /64s of 2001:db8:0:ff00::/56
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0xff, byte(i), 15: 1})
	}
	many := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}) } // a /24 each
	for _, tc := range []struct {
		name         string
		flood        func(int) netip.Addr
		sources      int
		inside, away netip.Addr // a real client in (or near) the flood's network, and one elsewhere
	}{
		{"IPv4 addresses of one /24", v4, 250, netip.MustParseAddr("203.0.113.251"), other},
		{"IPv6 /64s of one /56", v6, 250, netip.MustParseAddr("2001:db8:0:ffff::9"), netip.MustParseAddr("2001:db8:77::1")},
		{"IPv4 addresses of 300 networks", many, 300, netip.MustParseAddr("10.1.44.9"), other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newTest(Config{})
			cfg := l.Config()
			var dropped []netip.Addr
			var order []netip.Addr // the flood's admissions, oldest first
			silent := func(a netip.Addr) {
				if tk, _ := l.Admit(a); tk != nil {
					tk.Unproven(func() { dropped = append(dropped, a) })
					order = append(order, a)
				}
				c.t = c.t.Add(100 * time.Microsecond)
			}
			// Every source opens its share, the server's random early
			// drop at 0.5.
			for i := range tc.sources {
				for range cfg.PerSource {
					silent(tc.flood(i))
				}
			}
			if l.Open() > cfg.Full {
				t.Fatalf("%d open, Full %d", l.Open(), cfg.Full)
			}
			for k, n := range l.nets {
				if n > cfg.PerNetwork {
					t.Fatalf("network %s holds %d, PerNetwork %d", k, n, cfg.PerNetwork)
				}
			}
			if len(dropped) > 0 && dropped[0] != order[0] {
				t.Errorf("dropped %s first, want the oldest (%s)", dropped[0], order[0])
			}
			t.Logf("%d silent connections held (Full %d, PerNetwork %d), %d dropped for newer ones", l.Open(), cfg.Full, cfg.PerNetwork, len(dropped))
			for _, real := range []netip.Addr{tc.inside, tc.away} {
				before := len(dropped)
				tk, why := l.Admit(real)
				if tk == nil {
					t.Fatalf("a real client at %s refused behind the flood: %s", real, why)
				}
				tk.Unproven(func() { t.Errorf("the real client at %s dropped", real) })
				if len(dropped) > before+1 {
					t.Fatalf("%d connections dropped for one newcomer", len(dropped)-before)
				}
				// The flood goes on during its handshake, 16 connections:
				// they take the older silent slots, not the client's.
				for i := range 16 {
					silent(tc.flood(i % tc.sources))
				}
				if !tk.Proven() {
					t.Fatalf("the real client at %s lost its slot to the flood in its handshake", real)
				}
				// Proven, it is not dropped for the flood's newcomers,
				// however long they go on.
				for i := range 4 * tc.sources {
					silent(tc.flood(i % tc.sources))
				}
				c.t = c.t.Add(time.Minute)
				for i := range 4 * tc.sources {
					silent(tc.flood(i % tc.sources))
				}
				if !tk.Active() {
					t.Fatalf("the real client at %s, proven, dropped for the flood", real)
				}
			}
			if len(dropped) == 0 {
				t.Error("no silent connection was dropped")
			}
		})
	}
}

// Under a random early drop too a silent connection past the grace
// goes before the newcomer is refused; with none, the newcomer is
// refused as before; a silent connection goes before an idle one, and
// a proven one is never dropped.
func TestSilentDroppedFirst(t *testing.T) {
	l, c := newTest(Config{PerSource: 2, Start: 4, Full: 8, PerNetwork: 8, IdleGrace: time.Millisecond, SilentGrace: time.Second})
	var dropped []string
	mark := func(addr string, how string) *Ticket {
		tk, why := l.Admit(netip.MustParseAddr(addr))
		if tk == nil {
			t.Fatalf("%s refused: %s", addr, why)
		}
		drop := func() { dropped = append(dropped, addr) }
		switch how {
		case "idle":
			tk.Idle(drop)
		case "silent":
			tk.Unproven(drop)
		case "proven":
			tk.Unproven(drop)
			tk.Proven()
		}
		c.t = c.t.Add(10 * time.Millisecond)
		return tk
	}
	l.roll = func() float64 { return 1 }
	mark("10.0.1.1", "idle")
	mark("10.0.2.1", "proven")
	mark("10.0.3.1", "silent")
	mark("10.0.4.1", "silent")
	mark("10.0.5.1", "proven")
	l.roll = func() float64 { return 0 } // every newcomer past Start dropped early
	if tk, why := l.Admit(other); tk == nil || fmt.Sprint(dropped) != "[10.0.1.1]" {
		t.Fatalf("with only young silent ones, want the idle one dropped: %q, dropped %v", why, dropped)
	}
	c.t = c.t.Add(time.Second)
	for i, want := range []string{"[10.0.1.1 10.0.3.1]", "[10.0.1.1 10.0.3.1 10.0.4.1]"} {
		if tk, why := l.Admit(netip.AddrFrom4([4]byte{10, 9, byte(i), 1})); tk == nil || fmt.Sprint(dropped) != want {
			t.Fatalf("newcomer %d under early drop: %q, dropped %v, want %s", i, why, dropped, want)
		}
	}
	if tk, why := l.Admit(flooder); tk != nil || !why.Full {
		t.Fatalf("admitted with only proven connections to drop (%q)", why)
	}
	// A source's own cap is not made room for: one address cannot churn
	// its way past it.
	l.roll = func() float64 { return 1 }
	mark("10.0.7.1", "silent")
	mark("10.0.7.1", "silent")
	c.t = c.t.Add(time.Hour)
	if tk, _ := l.Admit(netip.MustParseAddr("10.0.7.1")); tk != nil {
		t.Error("a third connection of a source holding 2 silent ones admitted")
	}
}

// A network is an IPv4 /24 or an IPv6 /48; its share defaults to a
// quarter of Full (at least two sources' worth), also when Full is
// fitted to a low descriptor limit, and is never below PerSource.
func TestNetworkShare(t *testing.T) {
	for a, want := range map[string]string{
		"203.0.113.9":          "203.0.113.0/24",
		"::ffff:203.0.113.9":   "203.0.113.0/24",
		"2001:db8:0:ff12::1":   "2001:db8::/48",
		"2001:db8:1:ffff::abc": "2001:db8:1::/48",
	} {
		if got := netKey(netip.MustParseAddr(a)).String(); got != want {
			t.Errorf("network of %s: %s, want %s", a, got, want)
		}
	}
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{}.withDefaults(), 32},
		{Config{}.FitFDs(256, 200), 14}, // Full 56
		{Config{PerSource: 4, Full: 8}.withDefaults(), 8},
		{Config{PerSource: 64, PerNetwork: 8}.withDefaults(), 64},
		{Config{PerNetwork: 100}.FitFDs(256, 200), 100},
	} {
		if tc.cfg.PerNetwork != tc.want {
			t.Errorf("%+v: PerNetwork %d, want %d", tc.cfg, tc.cfg.PerNetwork, tc.want)
		}
	}
}
