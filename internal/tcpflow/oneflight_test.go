package tcpflow

import (
	"testing"
	"time"

	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// oneFlightAnswer plays, captured at the client over a path of rtt, a
// 517-byte request the server acknowledges, then (closing: the client
// closes its half first) a 5,322-byte answer in one flight of four
// segments a microsecond apart.
func oneFlightAnswer(c *ct.Conv, rtt time.Duration, closing bool) {
	handshake(c, stdSyn, stdSyn, rtt, "client")
	c.Data(client, 517)
	c.Advance(30 * time.Millisecond)
	c.AckAll(server)
	if closing {
		c.Advance(time.Millisecond)
		c.Fin(client)
	}
	c.Advance(17 * time.Millisecond)
	for _, n := range []int{1388, 1388, 1388, 1158} {
		c.Data(server, n)
		c.Advance(time.Microsecond)
	}
}

// An answer that fits in one flight, captured at the client, whose ACK
// never comes: the client had closed its half after the request and
// resets the connection when the answer arrives (a TLS client that gave
// up, seen in public captures of browsers). The answer left in
// microseconds; a flight is not delivered in less than a round trip,
// so the rate is over one, and slow start did not hold back what went
// in one flight.
func TestOneFlightAnswerReset(t *testing.T) {
	const rtt = 38 * time.Millisecond
	c := newConv()
	oneFlightAnswer(c, rtt, true)
	c.Advance(70 * time.Microsecond)
	c.Reset(client)
	c.Advance(28 * time.Millisecond)
	c.Rcvd[server]++ // the client's FIN
	c.Fin(server)
	c.Advance(60 * time.Microsecond)
	c.Reset(client)

	f := analyze(t, c, Options{}).Flows[0]
	d := dirOf(t, f, f.Server)
	if d.Bytes != 5322 {
		t.Fatalf("server sent %d bytes, want 5322", d.Bytes)
	}
	if f.Verdict.Verdict == diagnose.SlowStart {
		t.Errorf("verdict slow-start for an answer that went in one flight: %s; fix: %s", f.Summary, f.Fix)
	}
	if f.Verdict.Verdict != diagnose.AppLimited {
		t.Errorf("verdict %s (shares %v), want app-limited: the answer was all the server had", f.Verdict.Verdict, f.Shares)
	}
	if hasFlag(f.Flags, diagnose.FlagInconsistent) {
		t.Errorf("flagged inconsistent: %v", f.Inconsistent)
	}
	if d.Duration < rtt.Seconds()*0.9 {
		t.Errorf("the answer moved in %.6f s, less than a round trip (%v)", d.Duration, rtt)
	}
	if max := 5322 * 8 / (rtt.Seconds() * 0.9); d.Verdict.ThroughputBps > max {
		t.Errorf("achieved %.0f bit/s, more than one flight in a round trip (%.0f)", d.Verdict.ThroughputBps, max)
	}
}

// The same answer acknowledged and the connection closed: the control,
// one flight delivered in a round trip.
func TestOneFlightAnswerAcked(t *testing.T) {
	const rtt = 38 * time.Millisecond
	c := newConv()
	oneFlightAnswer(c, rtt, false)
	c.Advance(70 * time.Microsecond)
	c.AckAll(client)
	c.Fin(client)
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.AppLimited || hasFlag(f.Flags, diagnose.FlagInconsistent) {
		t.Errorf("verdict %s flags %v (%v), want app-limited, consistent", f.Verdict.Verdict, f.Flags, f.Inconsistent)
	}
}

// A transfer cut by a reset in its third round of slow start: its last
// flight is still out at the end, but the rounds before it waited on the
// congestion window, so slow start stays the verdict.
func TestResetInSlowStartStaysSlowStart(t *testing.T) {
	const rtt = 100 * time.Millisecond
	c := newConv()
	handshake(c, stdSyn, stdSyn, rtt, "sender")
	rounds(c, client, []int{14480, 28960}, 1448, []time.Duration{rtt})
	flight(c, client, 57920, 1448)
	c.Advance(rtt / 2)
	c.Reset(server)
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.SlowStart {
		t.Errorf("verdict %s (shares %v), want slow-start", f.Verdict.Verdict, f.Shares)
	}
}

// An answer in one flight whose first segment is the sender's first
// sample (the handshake's half, 77 ms here, is longer than the request's
// trip, so no sample marks the request reaching the server): the flight
// still answers the request, and when the connection closes before the
// sender saw its ACKs, its time is the answer's, not slow start's. The
// shape of a public capture of an HTTP download (nDPI's mpeg.pcap).
func TestOneFlightFirstSampleAnswers(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 77*time.Millisecond, "client")
	c.Data(client, 148)
	c.Advance(41 * time.Millisecond)
	c.AckAll(server)
	for k, n := range []int{1436, 1436, 1436, 1436, 1436, 1436, 599} {
		c.Data(server, n)
		c.Advance(500 * time.Microsecond)
		if k%2 == 1 {
			c.AckAll(client)
		}
	}
	c.AckAll(client)
	c.Advance(9 * time.Millisecond)
	c.Fin(client)
	c.Advance(50 * time.Millisecond)
	c.Rcvd[server]++
	c.Fin(server)
	c.Advance(60 * time.Microsecond)
	c.Rcvd[client]++
	c.AckAll(client)
	f := analyze(t, c, Options{}).Flows[0]
	if d := dirOf(t, f, f.Server); d.Bytes != 9215 || d.Turns != 1 {
		t.Fatalf("server sent %d bytes in %d answer(s), want 9215 in 1", d.Bytes, d.Turns)
	}
	if f.Verdict.Verdict != diagnose.AppLimited {
		t.Errorf("verdict %s (shares %v), want app-limited: %s", f.Verdict.Verdict, f.Shares, f.Summary)
	}
}

// A one-flight answer the client acknowledged, in a capture at the
// client that ends right after (the connection kept open): the server
// would see the ACK after the capture's end, but the answer was all
// delivered, so it was the last flight; a capture cut in a transfer's
// unacknowledged slow-start flight stays slow start.
func TestOneFlightAckedAtCaptureEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		acked bool
		want  string
	}{{"acknowledged", true, diagnose.AppLimited}, {"cut in flight", false, diagnose.SlowStart}} {
		t.Run(tc.name, func(t *testing.T) {
			const rtt = 40 * time.Millisecond
			c := newConv()
			handshake(c, stdSyn, stdSyn, rtt, "receiver")
			flights := []int{14480}
			if !tc.acked {
				flights = []int{14480, 28960}
			}
			for k, fl := range flights {
				flight(c, client, fl, 1448)
				if k < len(flights)-1 || tc.acked {
					c.Advance(100 * time.Microsecond)
					c.AckAll(server)
					c.Advance(rtt)
				}
			}
			f := analyze(t, c, Options{}).Flows[0]
			if f.Verdict.Verdict != tc.want {
				t.Errorf("verdict %s (shares %v), want %s: %s", f.Verdict.Verdict, f.Shares, tc.want, f.Summary)
			}
		})
	}
}
