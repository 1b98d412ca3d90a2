package tcpflow

import (
	"strings"
	"testing"
	"time"

	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// Issue 24, class 1: who waits on whom. A client sends 1.8 MB over SMTP
// in 18 parts and, after each, waits ~100 ms for the server's reply; it
// answers each reply in 0.46 ms. The idle time is the server's (or a
// proxy's between them): the verdict names the server and its latency,
// not the client's own 0.46 ms.
func TestWaitsOnPeerNamesThePeer(t *testing.T) {
	c := newConv()
	rtt := 10 * time.Millisecond
	handshake(c, stdSyn, stdSyn, rtt, "client")
	for range 18 {
		windowed(c, client, 100_000, 65535, 1448, rtt, "sender")
		c.Advance(100 * time.Millisecond) // the server thinks
		c.Data(server, 30)                // "250 OK"
		c.Advance(460 * time.Microsecond) // the client answers at once,
		c.Rcvd[client] = c.Next[server]   // its data acknowledging the reply
	}
	f := analyze(t, c, Options{}).Flows[0]
	t.Logf("%s %v shares %v\n%s\n%s", f.Verdict.Verdict, f.Flags, f.Shares, f.Summary, f.Fix)
	if f.Verdict.Verdict != diagnose.AppLimited {
		t.Fatalf("verdict %s, want app-limited", f.Verdict.Verdict)
	}
	if !strings.Contains(f.Fix, "198.18.0.2") || strings.Contains(f.Fix, "what delays the answers on 198.18.0.1") {
		t.Errorf("the fix does not blame the server 198.18.0.2: %s", f.Fix)
	}
}

// Issue 24, class 3: RTTs that fit the window. An old client sends
// with an 8 KB window over a 10 ms path, but its own stack delays ACKs
// on a 200 ms timer: the ACK of the SYN-ACK leaves 150 ms late and the
// server's greeting is acknowledged 180 ms late, so the client's half of
// the handshake (its lag behind the capture) reads 150 ms. The path's
// RTT must fit what the window carried: 8 KB a flight at ~6.5 Mbit/s
// is 10 ms, not 160 ms; the ACK delay is reported apart.
func TestRTTFitsTheWindow(t *testing.T) {
	c := newConv()
	c.Win = [2]uint16{8192, 8192}
	syn := ct.Opts{}.MSS(1460)
	c.Handshake(syn, syn, 10*time.Millisecond, 150*time.Millisecond)
	c.Advance(time.Millisecond)
	c.Data(server, 40) // the greeting
	c.Advance(180 * time.Millisecond)
	c.AckAll(client) // acknowledged on the timer
	windowed(c, client, 2_000_000, 8192, 1460, 10*time.Millisecond, "sender")
	f := analyze(t, c, Options{}).Flows[0]
	d := dirOf(t, f, "198.18.0.1:50000")
	t.Logf("%s %v thr %.0f ceiling %.0f rtt %+v\n%s", f.Verdict.Verdict, f.Flags, f.ThroughputBps, f.CeilingBps, d.RTT, f.Summary)
	if f.Verdict.Verdict != diagnose.RwndLimited {
		t.Errorf("verdict %s, want rwnd-limited", f.Verdict.Verdict)
	}
	if f.ThroughputBps > 1.1*f.CeilingBps {
		t.Errorf("achieved %.0f bit/s above the window's ceiling %.0f bit/s: the RTT %.3f s does not fit the window", f.ThroughputBps, f.CeilingBps, f.RTTSeconds)
	}
	if f.RTTSeconds < 0.009 || f.RTTSeconds > 0.012 {
		t.Errorf("path RTT %.4f s, want the path's 10 ms", f.RTTSeconds)
	}
	if d.RTT.AckDelay < 0.1 {
		t.Errorf("ACK delay %.3f s not reported (the handshake's half was 150 ms)", d.RTT.AckDelay)
	}
	if hasFlag(f.Flags, "vantage-server") {
		t.Errorf("flags %v: the capture is at the client; the handshake's slow half was the client's delayed ACK", f.Flags)
	}
	if len(f.Inconsistent) > 0 {
		t.Errorf("inconsistent: %v", f.Inconsistent)
	}
}

// Class 1, the server's side: a server answering a client that takes
// 300 ms between an answer and its next request waits on the client,
// and the fix says so (not "a slow backend" on the client).
func TestWaitsOnClientNamesTheClient(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 20*time.Millisecond, "server")
	for range 10 {
		c.Data(client, 200) // the request
		c.Advance(time.Millisecond)
		c.Rcvd[server] = c.Next[client]
		c.Data(server, 1448) // the answer, at once
		c.Data(server, 1448)
		c.Advance(20 * time.Millisecond)
		c.AckAll(client)
		c.Advance(300 * time.Millisecond) // the user reads, then asks again
		c.Rcvd[client] = c.Next[server]
	}
	an := analyze(t, c, Options{})
	d := dirOf(t, an.Flows[0], "198.18.0.2:443")
	t.Logf("%s %v\n%s\n%s", d.Verdict.Verdict, d.Flags, d.Summary, d.Fix)
	if d.Verdict.Verdict != diagnose.AppLimited || !hasFlag(d.Flags, diagnose.FlagWaitsOnPeer) {
		t.Fatalf("verdict %s flags %v, want app-limited, waits-on-peer", d.Verdict.Verdict, d.Flags)
	}
	if !strings.Contains(d.Fix, "waits on the client 198.18.0.1") || !strings.Contains(d.Fix, "300 ms") {
		t.Errorf("the fix does not name the client and its 300 ms: %s", d.Fix)
	}
	// The client's own direction waits on nobody: the server answered
	// in a millisecond, the client took its time.
	if cd := dirOf(t, an.Flows[0], "198.18.0.1:50000"); hasFlag(cd.Flags, diagnose.FlagWaitsOnPeer) {
		t.Errorf("the client's direction says it waits on the server: %v %s", cd.Flags, cd.Fix)
	}
}
