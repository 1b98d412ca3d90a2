package tcpflow

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// Issue 24, class 4: retransmission kinds as the stack made them (each
// sequence captured at the sender of a 40 ms path).

const kindRTT = 40 * time.Millisecond

// kindsOf returns the sender's retransmissions by kind.
func kindsOf(t *testing.T, c *ct.Conv) Retrans {
	t.Helper()
	f := analyze(t, c, Options{}).Flows[0]
	return dirOf(t, f, "198.18.0.1:50000").Retrans
}

// A tail loss probe (RFC 8985): the last segment of a flight is lost;
// two RTTs after it the sender sends it again with nothing acknowledged
// late, no duplicate ACK and no SACK: a probe, not a timeout.
func TestKindTailLossProbe(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, kindRTT, "client")
	rounds(c, client, []int{14480, 28960}, 1448, []time.Duration{kindRTT})
	var last uint32
	for range 10 {
		last = c.Data(client, 1448)
		c.Advance(10 * time.Microsecond)
	}
	c.Advance(kindRTT)
	c.Ack(server, last) // all but the last
	c.Advance(2 * kindRTT)
	c.Resend(client, last, 1448)
	c.Advance(kindRTT)
	c.AckAll(server)
	r := kindsOf(t, c)
	if r.Probe != 1 || r.RTO != 0 || r.Fast != 0 {
		t.Errorf("retransmissions %+v, want one probe", r)
	}
}

// A timeout after one duplicate ACK, SACK off: too few duplicates for a
// fast retransmit, so the sender waits for its timer (here 120 ms after
// the duplicate). Two duplicates answered at once are an early
// retransmit (RFC 5827): fast.
func TestKindTimeoutAfterFewDupAcks(t *testing.T) {
	noSACK := ct.Opts{}.MSS(1460).WScale(7)
	for _, tc := range []struct {
		name      string
		dups      int
		wait      time.Duration
		fast, rto int64
	}{
		{"one dupACK, then the timer", 1, 120 * time.Millisecond, 0, 1},
		{"two dupACKs, then the timer", 2, 130 * time.Millisecond, 0, 1},
		{"two dupACKs, resent at once", 2, 200 * time.Microsecond, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv()
			handshake(c, noSACK, noSACK, kindRTT, "client")
			rounds(c, client, []int{14480}, 1448, []time.Duration{kindRTT})
			a := c.Data(client, 1448)
			lost := c.Data(client, 1448)
			for range tc.dups {
				c.Data(client, 1448)
			}
			c.Advance(kindRTT)
			c.Ack(server, a+1448)
			for range tc.dups {
				c.Ack(server, lost) // a duplicate
				c.Advance(100 * time.Microsecond)
			}
			c.Advance(tc.wait)
			c.Resend(client, lost, 1448)
			c.Advance(kindRTT)
			c.AckAll(server)
			r := kindsOf(t, c)
			if r.Fast != tc.fast || r.RTO != tc.rto || r.Probe != 0 {
				t.Errorf("retransmissions %+v, want %d fast, %d after a timeout", r, tc.fast, tc.rto)
			}
		})
	}
}

// A spurious timeout told by timestamps (RFC 3522), SACK off so no
// D-SACK can tell it: the ACK after the resend echoes the original's
// timestamp, not the resend's.
func TestKindSpuriousByTimestamps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		echo     uint32 // the TSecr of the ACK after the resend: 0 the original's
		spurious int64
	}{
		{"the ACK echoes the original", 0, 1},
		{"the ACK echoes the resend", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv()
			tsSyn := ct.Opts{}.MSS(1460).WScale(7).TS(1, 0)
			handshake(c, tsSyn, tsSyn, kindRTT, "client")
			send := func(from ct.Side, seq uint32, n int, ts, ecr uint32) {
				c.Emit(from, ct.TCP{Seq: seq, Ack: c.Rcvd[from], Flags: capture.FlagACK, Window: c.Win[from], Payload: n, Options: ct.Opts{}.TS(ts, ecr)})
			}
			seq := c.Next[client]
			send(client, seq, 1448, 1000, 1) // the original
			c.Next[client] += 1448
			c.Advance(300 * time.Millisecond) // the ACK is held up: a delay spike
			send(client, seq, 1448, 1300, 1)  // the timer resends it
			c.Advance(kindRTT / 2)
			echo := uint32(1000)
			if tc.echo != 0 {
				echo = 1300
			}
			c.Rcvd[server] = c.Next[client]
			send(server, c.Next[server], 0, 5000, echo)
			r := kindsOf(t, c)
			if r.RTO != 1 || r.Spurious != tc.spurious {
				t.Errorf("retransmissions %+v, want 1 after a timeout, %d spurious", r, tc.spurious)
			}
		})
	}
}

// A FIN sent again is a retransmitted segment, as the stack counts it
// (RetransSegs): the first resend of a lost FIN, the tail, is a probe
// (with one segment out Linux waits the RTT plus 200 ms); the next one,
// the timer's; one after the FIN was acknowledged, spurious.
func TestKindFINResent(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, kindRTT, "client")
	rounds(c, client, []int{14480}, 1448, []time.Duration{kindRTT})
	fin := c.Next[client]
	c.Fin(client) // lost
	c.Advance(kindRTT + 200*time.Millisecond)
	c.Emit(client, ct.TCP{Seq: fin, Ack: c.Rcvd[client], Flags: capture.FlagACK | capture.FlagFIN, Window: c.Win[client]})
	c.Advance(500 * time.Millisecond)
	c.Emit(client, ct.TCP{Seq: fin, Ack: c.Rcvd[client], Flags: capture.FlagACK | capture.FlagFIN, Window: c.Win[client]})
	c.Advance(kindRTT)
	c.AckAll(server) // the FIN acknowledged
	c.Emit(client, ct.TCP{Seq: fin, Ack: c.Rcvd[client], Flags: capture.FlagACK | capture.FlagFIN, Window: c.Win[client]})
	r := kindsOf(t, c)
	if r.Probe != 1 || r.RTO != 1 || r.Spurious != 1 || r.Total != 3 {
		t.Errorf("retransmissions %+v, want a probe, a timeout and a spurious one", r)
	}
}
