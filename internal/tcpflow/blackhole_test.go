package tcpflow

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// blackHoleConv plays a server (the capture's host) answering a request
// with a head segment of head bytes that never arrives and a tail of
// tail bytes that does (the client SACKs it), then resending the head by
// its timer resends times, backing off, with no answer.
func blackHoleConv(head, tail, resends int) *DirReport {
	c := newConv()
	rtt := 50 * time.Millisecond
	handshake(c, stdSyn, stdSyn, rtt, "server")
	c.Data(client, 169)
	c.Advance(rtt / 2)
	h := c.Data(server, head)
	tl := c.Data(server, tail)
	c.Advance(rtt)
	c.Ack(client, h, tl, tl+uint32(tail))
	wait := 250 * time.Millisecond
	for range resends {
		c.Advance(wait)
		c.Resend(server, h, head)
		wait *= 2
	}
	c.Advance(time.Second)
	return serverDir(c)
}

// A PMTU black hole seen at the sender: its 1448-byte segment resent
// three times by its timer never arrives while the 620 bytes after it
// were SACKed. Not one: two resends, a tail as large as the head (one
// segment lost again and again, not a size), a head under 1000 bytes.
func TestBlackHoleSeenAtTheSender(t *testing.T) {
	d := blackHoleConv(1448, 620, 3)
	if d == nil || d.Cause == nil || d.Cause.Name != diagnose.CausePMTUBlackHole {
		t.Fatalf("cause %+v, want a PMTU black hole", d)
	}
	n := d.Cause.Numbers
	if n["segment_bytes"] != 1448 || n["passed_bytes"] != 620 || n["resends"] != 3 {
		t.Errorf("numbers %v", n)
	}
	if slices.Contains(d.Verdict.Flags, diagnose.FlagPeerUnresponsive) {
		t.Errorf("flags %v: the receiver SACKed what passed, it is not gone", d.Verdict.Flags)
	}
	for _, tc := range []struct{ head, tail, resends int }{{1448, 620, 2}, {1448, 1448, 4}, {900, 300, 4}} {
		if d := blackHoleConv(tc.head, tc.tail, tc.resends); d == nil || (d.Cause != nil && d.Cause.Name == diagnose.CausePMTUBlackHole) {
			t.Errorf("head %d, tail %d, %d resends: %+v, want no black hole", tc.head, tc.tail, tc.resends, d)
		}
	}
}

// blackHoleStall plays a server whose first full-size segment (and the
// one after it) never arrive and draw no SACK; it resends the head by its
// timer resends times, backing off; then, if smaller > 0, it resends the
// head in a smaller piece (probing the MTU), which the client acks, and
// the rest follows.
func blackHoleStall(resends, smaller int) *DirReport {
	c := newConv()
	rtt := 50 * time.Millisecond
	handshake(c, stdSyn, stdSyn, rtt, "server")
	c.Data(client, 37)
	c.Advance(rtt / 2)
	c.AckAll(server)
	h := c.Data(server, 1448)
	c.Data(server, 1448)
	wait := 250 * time.Millisecond
	for range resends {
		c.Advance(wait)
		c.Resend(server, h, 1448)
		wait *= 2
	}
	if smaller > 0 {
		c.Advance(wait)
		c.Resend(server, h, smaller)
		c.Advance(rtt)
		c.Ack(client, h+uint32(smaller))
	}
	c.Advance(time.Second)
	return serverDir(c)
}

// A bulk transfer stalled on a PMTU black hole with nothing passing
// after the handshake (issue 51: a download's first flight never
// arrives, no SACK, the head resent five times) is named at the sender,
// as is one whose sender found the MTU by resending the head smaller
// (net.ipv4.tcp_mtu_probing: three resends at 1448 bytes, the fourth at
// 1024 acknowledged at once). Two resends name nothing.
func TestBlackHoleStalledBulk(t *testing.T) {
	for _, tc := range []struct {
		name             string
		resends, smaller int
		want, wantInText string
	}{
		{"never passed", 5, 0, diagnose.CausePMTUBlackHole, "nothing after the handshake was acknowledged"},
		{"resent smaller", 3, 1024, diagnose.CausePMTUBlackHole, "resent in 1024-byte pieces, the same data passed"},
		{"two resends", 2, 0, "", ""},
	} {
		d := blackHoleStall(tc.resends, tc.smaller)
		if d == nil {
			t.Fatalf("%s: no direction", tc.name)
		}
		var got, text string
		if d.Cause != nil {
			got, text = d.Cause.Name, d.Cause.Text
		}
		if got != tc.want || !strings.Contains(text, tc.wantInText) {
			t.Errorf("%s: cause %q (%s), want %q", tc.name, got, text, tc.want)
		}
	}
}
