//go:build linux

package twohost

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// udpControl starts a session and runs a short download (a datagram
// run's pace is bounded by what the session carried).
func udpControl(t *testing.T, addr string) (*ctrl, ClientOptions) {
	t.Helper()
	o := ClientOptions{Addr: addr, Token: servertest.Token, Snapshot: servertest.FakeSnap, DialTimeout: 5 * time.Second, SampleEvery: 100 * time.Millisecond}
	cc, err := dialControl(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.close)
	if _, err := cc.phase(context.Background(), o, wire.PhaseReq{Name: wire.PhaseDownload, Streams: 1, DurationS: 0.3, RateBps: 100e6}); err != nil {
		t.Fatal(err)
	}
	return cc, o
}

// A datagram run on loopback: the server sends at the granted pace for
// the granted time, every datagram arrives, and none finds a queue.
func TestUDPRunLoopback(t *testing.T) {
	cc, o := udpControl(t, servertest.StartUDP(t, server.ServerConfig{}, true))
	if !cc.acc.Caps.UDP {
		t.Fatal("the server offers no datagram runs")
	}
	rate, dur := 40e6, 500*time.Millisecond
	pr, err := cc.phase(context.Background(), o, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: dur.Seconds(), RateBps: rate})
	if err != nil {
		t.Fatal(err)
	}
	size := pr.Grant.DatagramBytes
	// The grant, not the ask: a busy machine's download before carried
	// less, and the pace is bounded by it.
	rate = pr.Grant.RateBps
	want := rate * dur.Seconds() / float64(8*size)
	t.Logf("grant %+v; done %+v; stats %+v", pr.Grant, pr.Done, *pr.UDP)
	if size != wire.UDPMaxSize { // loopback's segments are 64 KB
		t.Errorf("datagrams of %d bytes, want %d", size, wire.UDPMaxSize)
	}
	if n := float64(pr.Done.Datagrams); n < 0.9*want || n > 1.1*want {
		t.Errorf("the server sent %.0f datagrams, want %.0f (its pace)", n, want)
	}
	if pr.UDP.Received != pr.Done.Datagrams {
		t.Errorf("%d of %d datagrams arrived on loopback", pr.UDP.Received, pr.Done.Datagrams)
	}
	if pr.UDP.Bps < 0.8*rate || pr.UDP.Bps > 1.2*rate {
		t.Errorf("arrived at %.3g bit/s, paced at %.3g", pr.UDP.Bps, rate)
	}
	if pr.UDP.Queue > time.Millisecond {
		t.Errorf("a queue of %s on loopback", pr.UDP.Queue)
	}
	if pr.Done.Bytes != pr.Done.Datagrams*int64(size) {
		t.Errorf("%d bytes for %d datagrams of %d", pr.Done.Bytes, pr.Done.Datagrams, size)
	}
	// The control connection goes on after the run.
	if _, err := cc.pings(context.Background(), 1, 0); err != nil {
		t.Errorf("ping after the run: %v", err)
	}
}

// The server sends datagrams only to the host of the session that was
// granted the run, and only after its token: a hello with another token,
// or with the right one from another address, gets nothing; a data
// connection cannot attach to a datagram run.
func TestUDPRunOnlyToItsHost(t *testing.T) {
	addr := servertest.StartUDP(t, server.ServerConfig{}, true)
	cc, _ := udpControl(t, addr)
	if err := cc.send(wire.TypePhase, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: 0.3, RateBps: 10e6}); err != nil {
		t.Fatal(err)
	}
	f, err := cc.await(wire.TypeGrant, 5*time.Second)
	var g wire.Grant
	if err == nil {
		err = wire.Decode(f, wire.TypeGrant, &g)
	}
	if err != nil {
		t.Fatal(err)
	}
	server := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	silent := func(from string, hello []byte) {
		t.Helper()
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)})
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		for range 3 {
			if _, err := pc.WriteToUDP(hello, server); err != nil {
				t.Fatal(err)
			}
		}
		_ = pc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if n, _, err := pc.ReadFromUDP(make([]byte, 2048)); err == nil {
			t.Errorf("%s got a %d-byte datagram", from, n)
		}
	}
	wrong := append([]byte(nil), g.Token...)
	wrong[0] ^= 1
	silent("127.0.0.1", wire.UDPHello(wrong))
	silent("127.0.0.2", wire.UDPHello(g.Token)) // another host (loopback's other address)
	silent("127.0.0.1", []byte("LHU1"))

	c, h := servertest.RawConn(t, addr)
	a := servertest.AuthMsg(servertest.Token, h)
	a.Purpose, a.Session, a.Phase = wire.PurposeData, cc.acc.Session, g.Phase
	a.MAC = wire.ClientMAC(servertest.Token, h.Nonce, a)
	if err := wire.WriteMsg(c, wire.TypeAuth, a); err != nil {
		t.Fatal(err)
	}
	_, _ = servertest.Next(t, c) // welcome
	_, err = servertest.Next(t, c)
	servertest.WantRefusal(t, err, wire.CodeRequest)

	// Without a hello the run ends, and says so.
	f, err = cc.await(wire.TypePhaseDone, wire.UDPClaimWindow+5*time.Second)
	var d wire.PhaseDone
	if err == nil {
		err = wire.Decode(f, wire.TypePhaseDone, &d)
	}
	if err != nil || d.Reason != "no hello" || d.Datagrams != 0 {
		t.Errorf("phase-done %+v, %v; want no hello and nothing sent", d, err)
	}
}

// The server bounds a run's pace by what the session's downloads
// carried (at most udpMaxOver, 1.5, times it), and refuses one before
// any.
func TestUDPRunPaceBounded(t *testing.T) {
	const udpMaxOver = 1.5 // the server's bound (internal/twohost/server)

	cc, o := udpControl(t, servertest.StartUDP(t, server.ServerConfig{}, true)) // 100 Mbit/s carried
	pr, err := cc.phase(context.Background(), o, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: 0.2, RateBps: 10e9})
	if err != nil {
		t.Fatal(err)
	}
	if r := pr.Grant.RateBps; r > udpMaxOver*100e6*1.05 || r < 10e6 {
		t.Errorf("granted %.3g bit/s after a download at 100 Mbit/s", r)
	}
	o.Addr = servertest.StartUDP(t, server.ServerConfig{}, true)
	first, err := dialControl(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer first.close()
	_, err = first.phase(context.Background(), o, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: 0.2, RateBps: 10e6})
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != wire.CodeCaps {
		t.Errorf("a run before any download: %v, want a caps refusal", err)
	}
}

// A server without its datagram port does not offer the run, and
// refuses one asked anyway as beyond its caps.
func TestUDPRunRefusedWithoutPort(t *testing.T) {
	cc, o := udpControl(t, servertest.Start(t, server.ServerConfig{}))
	if cc.acc.Caps.UDP {
		t.Error("caps offer datagram runs without a datagram port")
	}
	_, err := cc.phase(context.Background(), o, wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: 0.3, RateBps: 10e6})
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != wire.CodeCaps {
		t.Errorf("err %v, want a caps refusal", err)
	}
}
