package connlimit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// A server full of connections that authenticated and then sent nothing
// drops the longest-idle one for a newcomer (issue 28 item 8: 250 of
// them from as many addresses kept every test out); one idle for less
// than IdleGrace (a client between its proof and its next message) is
// left alone while few are idle, and the dropped one's source is not
// penalized.
func TestIdleDroppedToMakeRoom(t *testing.T) {
	l, c := newTest(Config{PerSource: 2, Start: 8, Full: 8, IdleGrace: time.Second})
	var dropped []string
	first, second := idleTicket(t, l, c, "10.0.0.1", &dropped), idleTicket(t, l, c, "10.0.0.2", &dropped)
	busy := fill(t, l, 6)
	if tk, why := l.Admit(other); tk != nil || !why.Full {
		t.Fatalf("a newcomer admitted (or not for want of room: %q) while both idle connections were younger than IdleGrace", why)
	}
	c.t = c.t.Add(time.Second)
	tk, why := l.Admit(other)
	if tk == nil {
		t.Fatalf("a newcomer refused while a connection was idle for over a second: %s", why)
	}
	if fmt.Sprint(dropped) != "[10.0.0.1]" || l.Open() != 8 {
		t.Fatalf("dropped %v (want the longest idle, 10.0.0.1), open %d", dropped, l.Open())
	}
	if first.Active() {
		t.Error("a dropped connection's ticket says it is active")
	}
	first.Done(true) // its goroutine sees the closed connection: no effect
	if l.Open() != 8 {
		t.Errorf("Done on a dropped ticket gave a slot back twice: open %d", l.Open())
	}
	if !second.Active() {
		t.Fatal("a connection that went on was dropped")
	}
	if tk, why := l.Admit(flooder); tk != nil || !why.Full {
		t.Fatalf("admitted with no idle connection left (%q)", why)
	}
	second.Done(false)
	busy[0].Done(false)
	if tk, why := l.Admit(netip.MustParseAddr("10.0.0.1")); tk == nil {
		t.Errorf("10.0.0.1, dropped to make room, refused afterwards: %s", why)
	}
}

// When more than a quarter of the slots are idle (a flood of them), the
// longest-idle goes at once, however young: a client that goes on at
// once is the newest and is kept.
func TestIdleFloodDroppedAtOnce(t *testing.T) {
	l, c := newTest(Config{PerSource: 2, Start: 8, Full: 8, IdleGrace: time.Hour})
	var dropped []string
	for i := range 4 {
		idleTicket(t, l, c, fmt.Sprintf("10.0.0.%d", i+1), &dropped)
	}
	fill(t, l, 4)
	for i, want := range []string{"[10.0.0.1]", "[10.0.0.1 10.0.0.2]"} {
		if tk, why := l.Admit(netip.MustParseAddr(fmt.Sprintf("10.1.0.%d", i))); tk == nil || fmt.Sprint(dropped) != want {
			t.Fatalf("newcomer %d: %q, dropped %v, want %s", i, why, dropped, want)
		}
	}
	// Two idle of 8 are not a flood: they keep their grace.
	if tk, why := l.Admit(other); tk != nil || !why.Full {
		t.Fatalf("admitted by dropping the last idle connection (%q)", why)
	}
}

// idleTicket admits a connection from addr and marks it idle, 100 ms
// before the next.
func idleTicket(t *testing.T, l *Limiter, c *clock, addr string, dropped *[]string) *Ticket {
	t.Helper()
	tk, why := l.Admit(netip.MustParseAddr(addr))
	if tk == nil {
		t.Fatalf("%s refused: %s", addr, why)
	}
	tk.Idle(func() { *dropped = append(*dropped, addr) })
	c.t = c.t.Add(100 * time.Millisecond)
	return tk
}

// fill admits n connections from as many sources (each in a network
// of its own), not idle.
func fill(t *testing.T, l *Limiter, n int) []*Ticket {
	t.Helper()
	l.roll = func() float64 { return 1 } // no early drop
	var out []*Ticket
	for i := range n {
		tk, why := l.Admit(netip.AddrFrom4([4]byte{10, 2, byte(i), 1}))
		if tk == nil {
			t.Fatalf("filling: %s", why)
		}
		out = append(out, tk)
	}
	return out
}
