//go:build linux

package server_test

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// ask asks for a phase on a session's control connection and returns
// its grant.
func ask(t *testing.T, c net.Conn, r wire.PhaseReq) wire.Grant {
	t.Helper()
	if err := wire.WriteMsg(c, wire.TypePhase, r); err != nil {
		t.Fatal(err)
	}
	var g wire.Grant
	f, err := servertest.Next(t, c)
	if err == nil {
		err = wire.Decode(f, wire.TypeGrant, &g)
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// phaseDone reads a session's frames until the running phase's
// phase-done.
func phaseDone(t *testing.T, c net.Conn) wire.PhaseDone {
	t.Helper()
	for {
		f, err := servertest.Next(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == wire.TypePhaseDone {
			var d wire.PhaseDone
			if err := wire.Decode(f, wire.TypePhaseDone, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
}

// A server held off the CPU (a cpu.max quota: the lab's CPU-bound case
// at 0.01 of a core) owes more datagrams than it can send; its run
// still ends on time, give or take a quarter of its length spent on
// what it owed, where the client waits for phase-done (measured before:
// a run due to last 2 s went on past the client's 35 s).
func TestUDPRunEndsOnTimeWhenBehind(t *testing.T) {
	addr := servertest.StartUDP(t, server.ServerConfig{}, true)
	c, acc := servertest.StartSession(t, addr)
	// A short download first: a datagram run's pace is bounded by what
	// the session carried.
	g := ask(t, c, wire.PhaseReq{Name: wire.PhaseDownload, Streams: 1, DurationS: 0.3, RateBps: 100e6})
	s, err := attach(addr, acc.Session, g.Phase, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, s)
	s.Close()
	phaseDone(t, c)

	orig := *server.WriteDatagram
	t.Cleanup(func() { *server.WriteDatagram = orig })
	var first time.Time
	*server.WriteDatagram = func(pc *net.UDPConn, b []byte, to netip.AddrPort) error {
		// From 0.3 s into the run, each send takes 20 ms: the sender
		// falls behind its pace (about 400 a second) at once.
		if first.IsZero() {
			first = time.Now()
		} else if time.Since(first) > 300*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
		}
		return orig(pc, b, to)
	}
	dur := 500 * time.Millisecond
	g = ask(t, c, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: dur.Seconds(), RateBps: 150e6})
	pc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() { // the client's side: it reads what comes
		buf := make([]byte, wire.UDPMaxSize+1)
		for {
			if _, err := pc.Read(buf); err != nil {
				return
			}
		}
	}()
	if _, err := pc.Write(wire.UDPHello(g.Token)); err != nil {
		t.Fatal(err)
	}
	done := phaseDone(t, c)
	size := g.DatagramBytes
	owed := g.RateBps * dur.Seconds() / float64(8*size)
	t.Logf("grant %.3g bit/s of %d-byte datagrams: %.0f owed; done %+v", g.RateBps, size, owed, done)
	if g.RateBps < 20e6 {
		t.Fatalf("granted %.3g bit/s: too slow a pace to fall behind", g.RateBps)
	}
	// Without the bound, the catch-up begun at 0.32 s (16 datagrams owed
	// at 20 ms each, then more) runs far past the end.
	if over := time.Duration(done.Seconds*float64(time.Second)) - dur; over > dur/4+100*time.Millisecond || done.Reason != "duration" {
		t.Errorf("the run ended %s after its %s (%s)", over, dur, done.Reason)
	}
}
