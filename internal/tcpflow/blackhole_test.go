package tcpflow

import (
	"bytes"
	"slices"
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
	an, err := Analyze(bytes.NewReader(c.W.Bytes()), Options{})
	if err != nil || len(an.Flows) != 1 {
		return nil
	}
	for _, d := range an.Flows[0].Directions {
		if d.Sender == "198.18.0.2:443" {
			return &d
		}
	}
	return nil
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
