package tcpflow

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Issue 24, class 2: capture-limited only when nothing can be judged.

// A seven-packet excerpt (no handshake) whose window falls to zero and
// reopens 10 ms later shows a zero-window stall.
func TestExcerptZeroWindow(t *testing.T) {
	c := newConv()
	c.Next = [2]uint32{5000, 9000}
	c.Rcvd = [2]uint32{9000, 5000}
	c.Data(client, 1448)
	c.Data(client, 1448)
	c.Advance(200 * time.Microsecond)
	c.Win[server] = 0
	c.AckAll(server) // the window closes
	c.Advance(10 * time.Millisecond)
	c.Win[server] = 2000
	c.AckAll(server) // and reopens
	c.Advance(100 * time.Microsecond)
	c.Data(client, 1448)
	c.Data(client, 500)
	c.Advance(200 * time.Microsecond)
	c.AckAll(server)
	f := analyze(t, c, Options{}).Flows[0]
	t.Logf("%s %v %v\n%s", f.Verdict.Verdict, f.Flags, f.Shares, f.Summary)
	if f.Verdict.Verdict != diagnose.ZeroWindow {
		t.Errorf("verdict %s, want zero-window", f.Verdict.Verdict)
	}
}

// A request/response capture filtered to segments with payload (no pure
// ACK from either end) still shows when each request came and when its
// answer left: the server thinks 100 ms before each answer.
func TestPayloadOnlyRequestResponse(t *testing.T) {
	c := newConv()
	c.Next = [2]uint32{5000, 9000}
	c.Rcvd = [2]uint32{9000, 5000}
	for range 20 {
		c.Data(client, 300)
		c.Advance(125 * time.Millisecond) // a 50 ms path, 100 ms of thinking
		c.Rcvd[server] = c.Next[client]
		for range 3 {
			c.Data(server, 1448)
			c.Advance(12 * time.Microsecond)
		}
		c.Data(server, 500)
		c.Advance(51 * time.Millisecond)
		c.Rcvd[client] = c.Next[server]
	}
	f := analyze(t, c, Options{}).Flows[0]
	t.Logf("%s %v %v\n%s", f.Verdict.Verdict, f.Flags, f.Shares, f.Summary)
	if f.Verdict.Verdict != diagnose.AppLimited || !hasFlag(f.Flags, diagnose.FlagPayloadOnly) || !hasFlag(f.Flags, diagnose.FlagRequestResponse) {
		t.Errorf("verdict %s flags %v, want app-limited, payload-only, request-response", f.Verdict.Verdict, f.Flags)
	}
	// A bulk transfer filtered so is still not judged: its flight and
	// RTT are unknown.
	b := newConv()
	b.Next = [2]uint32{5000, 9000}
	b.Rcvd = [2]uint32{9000, 5000}
	b.Data(client, 200)
	b.Advance(time.Millisecond)
	for range 200 {
		b.Data(server, 1448)
		b.Advance(100 * time.Microsecond)
	}
	g := analyze(t, b, Options{}).Flows[0]
	if g.Verdict.Verdict != diagnose.CaptureLimited {
		t.Errorf("bulk payload-only: verdict %s (%s), want capture-limited", g.Verdict.Verdict, g.Summary)
	}
}
