package tcpflow

import (
	"strings"
	"testing"
	"time"

	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// pathSim plays a bulk transfer from the client, captured at the client,
// round by round: a Reno sender (slow start, then one segment more a
// round, halved at a loss) over a path of rtt whose bottleneck carries
// bdp segments a round trip, behind a drop-tail queue of queue segments.
// The part of a flight beyond bdp+queue is lost at the queue (near the
// flight's end: the last two segments get through, so the receiver's
// SACK shows the hole), and every lossEvery-th data segment is lost on
// the way (random loss). A flight's round trip is rtt plus the time its
// standing queue takes to drain.
type pathSim struct {
	rtt        time.Duration
	bdp, queue int
	lossEvery  int
	rounds     int
	// tail: in the round after the first loss, its first tail segments
	// are lost too (slow start's overshoot still draining), so the
	// recovery begins before any round trip is timed again.
	tail int
}

const simMSS = 1448

func (p pathSim) play(c *ct.Conv) {
	handshake(c, stdSyn, stdSyn, p.rtt, "client")
	cwnd, sent, ss := 10, 0, true
	tailAt := -1
	for r := range p.rounds {
		over := max(cwnd-p.bdp-p.queue, 0)
		standing := min(max(cwnd-p.bdp, 0), p.queue)
		rtt := p.rtt + p.rtt*time.Duration(standing)/time.Duration(p.bdp)
		seqs := make([]uint32, cwnd)
		lost := make([]bool, cwnd)
		for i := range cwnd {
			seqs[i] = c.Data(client, simMSS)
			sent++
			lost[i] = p.lossEvery > 0 && sent%p.lossEvery == 0 && i < cwnd-2
			lost[i] = lost[i] || (i >= cwnd-over-2 && i < cwnd-2) || (r == tailAt && i < p.tail)
			c.Advance(5 * time.Microsecond)
		}
		c.Advance(rtt)
		first, last := -1, -1
		for i, l := range lost {
			if l {
				last = i
				if first < 0 {
					first = i
				}
			}
		}
		if first < 0 {
			c.AckAll(server)
			c.Advance(5 * time.Microsecond)
			if ss {
				cwnd *= 2
			} else {
				cwnd++
			}
			continue
		}
		// The ACK of what came before the first hole, with the highest
		// run delivered above the last one SACKed; the lost segments are
		// resent and acknowledged a round trip later.
		c.Ack(server, seqs[first], seqs[last]+simMSS, c.Next[client])
		c.Advance(20 * time.Microsecond)
		for i, l := range lost {
			if l {
				c.Resend(client, seqs[i], simMSS)
				c.Advance(5 * time.Microsecond)
			}
		}
		c.Advance(rtt)
		c.AckAll(server)
		c.Advance(5 * time.Microsecond)
		if ss {
			tailAt = r + 1
		}
		cwnd, ss = max(cwnd/2, 2), false
	}
	c.Fin(client)
	c.Advance(p.rtt)
	c.Fin(server)
}

func TestPathCauses(t *testing.T) {
	const rtt = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		sim  pathSim
		want string // "" no cause
	}{
		// 50 ms x 24 Mbit/s: a BDP of 100 segments.
		{"random-loss", pathSim{rtt: rtt, bdp: 100, queue: 100, lossEvery: 300, rounds: 200}, diagnose.CauseRandomLoss},
		// Slow start's overshoot of the one-BDP queue goes on into the
		// next recovery, which begins before a round trip is timed
		// again: its queue is the last one's, not none (a lab run lost
		// 397 segments, then 33, the 33 counted with no queue before
		// them: named shallow-buffer).
		{"random-loss-overshoot", pathSim{rtt: rtt, bdp: 100, queue: 100, lossEvery: 600, rounds: 200, tail: 60}, diagnose.CauseRandomLoss},
		{"shallow-buffer", pathSim{rtt: rtt, bdp: 100, queue: 5, rounds: 200}, diagnose.CauseShallowBuffer},
		{"bufferbloat", pathSim{rtt: rtt, bdp: 100, queue: 400, rounds: 200}, diagnose.CauseBufferbloat},
		// A queue of one BDP, filled and drained as Reno probes it: the
		// bottleneck's own.
		{"clean", pathSim{rtt: rtt, bdp: 100, queue: 100, rounds: 200}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv()
			tc.sim.play(c)
			f := analyze(t, c, Options{}).Flows[0]
			d := dirOf(t, f, "198.18.0.1:50000")
			got := ""
			if d.Cause != nil {
				got = d.Cause.Name
			}
			t.Logf("%s %.1f Mbit/s, retransmitted %d: cause %q %v", d.Verdict.Verdict, d.ThroughputBps/1e6, d.Retrans.Total, got, d.Cause)
			if got != tc.want {
				t.Fatalf("cause %q, want %q", got, tc.want)
			}
			// Holes repaired by resends are losses, not reordering.
			if hasFlag(d.Flags, diagnose.FlagReordering) {
				t.Errorf("flags %v: reordering on a path that only loses", d.Flags)
			}
			if d.Cause != nil && (d.Fix != strings.Join(d.Cause.Fix, "; ") || f.Fix != d.Fix) {
				t.Errorf("fix %q, want the cause's %q", d.Fix, d.Cause.Fix)
			}
		})
	}
}

// A path that reorders, captured at the receiver: in each round one
// segment arrives a millisecond after the next (out of order at the
// capture point), and every fourth round the sender, taking it for
// lost, resends it after the receiver had it (a duplicate the receiver
// reports with a D-SACK).
func TestPathCauseReordering(t *testing.T) {
	const rtt = 40 * time.Millisecond
	c := newConv()
	handshake(c, stdSyn, stdSyn, rtt, "receiver")
	for r := range 100 {
		var late uint32
		for i := range 60 {
			if i == 30 {
				late = c.Next[client]
				c.Next[client] += simMSS // held back on the way
				continue
			}
			c.Data(client, simMSS)
			c.Advance(5 * time.Microsecond)
			if i == 31 {
				c.Ack(server, late, late+simMSS, c.Next[client])
				c.Advance(time.Millisecond)
				c.Resend(client, late, simMSS) // the late one arrives
				c.Advance(5 * time.Microsecond)
			}
		}
		c.AckAll(server)
		if r%4 == 0 {
			c.Advance(100 * time.Microsecond)
			c.Resend(client, late, simMSS) // resent for nothing
			c.Advance(20 * time.Microsecond)
			c.Ack(server, c.Next[client], late, late+simMSS)
		}
		c.Advance(rtt)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := dirOf(t, f, "198.18.0.1:50000")
	t.Logf("%s (flags %v), reordered %d, retransmissions %+v: %v", d.Verdict.Verdict, d.Flags, d.Reordered, d.Retrans, d.Cause)
	if d.Cause == nil || d.Cause.Name != diagnose.CauseReordering {
		t.Fatalf("cause %v, want reordering", d.Cause)
	}
	if !strings.Contains(d.Cause.Text, "arrived out of order at the capture point") || d.Cause.Numbers["spurious_retransmissions"] != float64(d.Retrans.Spurious) {
		t.Errorf("text %q numbers %v", d.Cause.Text, d.Cause.Numbers)
	}
}

// The loaded RTT is the median over the steady transfer: slow start's
// samples are left out once enough came after it, and the store thins
// evenly however many samples come.
func TestLoadedRTT(t *testing.T) {
	var c causeTrack
	for i := range 1000 {
		ms := int64(50)
		if i >= 100 {
			ms = 150 + int64(i%7) // the queue stands after slow start
		}
		c.addRTT(ms*1e6, i >= 100)
	}
	if c.n > nSteady || c.n < nSteady/2 {
		t.Errorf("%d samples kept", c.n)
	}
	if got, top := c.loadedRTT(); got < 150*time.Millisecond || got > 156*time.Millisecond || top < 155*time.Millisecond || top > 156*time.Millisecond {
		t.Errorf("loaded RTT %s, top %s, want the steady transfer's (150-156 ms, 155-156)", got, top)
	}
	// The samples kept are the offered ones 0, stride, 2*stride, ... of
	// the stride at the end, in order (the store thins evenly).
	var seq causeTrack
	for i := range 10_000 {
		seq.addRTT(int64(i+1)*1e3, false) // the i-th offered sample is i+1 µs
	}
	for k := range seq.n {
		if want := uint32(k*seq.stride + 1); seq.rtts[k] != want {
			t.Fatalf("stride %d: sample %d kept is %d µs, want %d", seq.stride, k, seq.rtts[k], want)
		}
	}
	if seq.stride != 256 || seq.n != 40 {
		t.Errorf("10,000 samples: stride %d, %d kept; want 256 and 40", seq.stride, seq.n)
	}
	// Too few samples after slow start: the whole transfer's median.
	var short causeTrack
	for i := range 20 {
		short.addRTT(int64(50+i)*1e6, i >= 17)
	}
	if got, top := short.loadedRTT(); got != 60*time.Millisecond || top != 68*time.Millisecond {
		t.Errorf("loaded RTT %s, top %s, want 60 ms and 68 ms", got, top)
	}
	// Under minTop samples, no top: one delayed ACK would be it.
	var few causeTrack
	for i := range minTop - 1 {
		few.addRTT(int64(50+i)*1e6, false)
	}
	if got, top := few.loadedRTT(); got != 59*time.Millisecond || top != 0 {
		t.Errorf("%d samples: loaded RTT %s, top %s, want 59 ms and none", minTop-1, got, top)
	}
}

// Captured at the receiver, a flow's round trips are the receiver's
// half and the handshake's: a queue before the capture point never
// shows, so no loss cause is named, and the direction says why.
func TestPathCauseAwayFromSender(t *testing.T) {
	const rtt = 40 * time.Millisecond
	c := newConv()
	handshake(c, stdSyn, stdSyn, rtt, "receiver")
	for r := range 100 {
		var lost uint32
		for i := range 60 {
			if i == 30 && r%5 == 0 {
				lost = c.Next[client]
				c.Next[client] += simMSS // lost before the capture point
				continue
			}
			c.Data(client, simMSS)
			c.Advance(5 * time.Microsecond)
		}
		if r%5 == 0 {
			c.Ack(server, lost, lost+simMSS, c.Next[client])
			c.Advance(rtt)
			c.Resend(client, lost, simMSS)
			c.Advance(5 * time.Microsecond)
		}
		c.AckAll(server)
		c.Advance(rtt)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := dirOf(t, f, "198.18.0.1:50000")
	if v := d.Verdict.Verdict; v != diagnose.LossLimited && v != diagnose.Bottleneck {
		t.Fatalf("verdict %s (%v), want one of the congestion window", v, d.Shares)
	}
	if d.Cause != nil || !strings.Contains(d.CauseNote, "away from the sender") {
		t.Errorf("cause %v, note %q", d.Cause, d.CauseNote)
	}
}

// A path that reorders, captured at the sender (where segments leave in
// order): in each round the receiver SACKs around one segment held back
// on the way, then acknowledges it a few milliseconds later with nothing
// resent (RACK waited). The capture sees the reordering in the ACKs
// alone (measured: 5% of the segments held 30 ms on 100 ms x 500 Mbit/s,
// analyze at the server named no reordering before).
func TestPathCauseReorderingAtSender(t *testing.T) {
	const rtt = 40 * time.Millisecond
	c := newConv()
	handshake(c, stdSyn, stdSyn, rtt, "client")
	for range 100 {
		var late uint32
		for i := range 60 {
			seq := c.Data(client, simMSS)
			if i == 30 {
				late = seq
			}
			c.Advance(5 * time.Microsecond)
		}
		c.Advance(rtt)
		c.Ack(server, late, late+simMSS, c.Next[client])
		c.Advance(3 * time.Millisecond) // the held one arrives
		c.AckAll(server)
		c.Advance(5 * time.Microsecond)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := dirOf(t, f, "198.18.0.1:50000")
	t.Logf("%s (flags %v), reordered %d, retransmissions %+v: %v", d.Verdict.Verdict, d.Flags, d.Reordered, d.Retrans, d.Cause)
	if !hasFlag(d.Flags, diagnose.FlagReordering) || d.Retrans.Total != 0 {
		t.Fatalf("flags %v, retransmissions %d: want reordering and none resent", d.Flags, d.Retrans.Total)
	}
}
