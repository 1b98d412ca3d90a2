package flows

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// trackOf samples the interval from p to c in n steps: the counters
// grow evenly, the retransmissions come as losses (segments per sample,
// zero for none), the smoothed RTT is rtt throughout.
func trackOf(p, c Sock, n int, losses []int64, rtt time.Duration) *LossTrack {
	tr := NewLossTrack(p)
	s := p
	for i := 1; i <= n; i++ {
		s.BytesAcked = p.BytesAcked + (c.BytesAcked-p.BytesAcked)*int64(i)/int64(n)
		s.DataSegsOut = p.DataSegsOut + (c.DataSegsOut-p.DataSegsOut)*int64(i)/int64(n)
		if i-1 < len(losses) {
			s.Retrans += losses[i-1]
		}
		s.RTT = rtt
		s.DeliveryBps = 80e6
		tr.Add(s)
	}
	return tr
}

// Issue 23: flows names the loss causes from the samples of its
// interval, as test names a phase's: a segment lost here and there with
// the smoothed RTT at its minimum is random loss; the same losses in two
// bursts with a small queue, a shallow buffer; without samples, none.
func TestJudgeLossCauses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		losses []int64
		rtt    time.Duration
		want   string
	}{
		{"random loss", []int64{4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 9}, 201 * time.Millisecond, diagnose.CauseRandomLoss},
		{"shallow buffer", []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 37}, 215 * time.Millisecond, diagnose.CauseShallowBuffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := lossy(tc.rtt)
			c.Retrans = p.Retrans
			for _, l := range tc.losses {
				c.Retrans += l
			}
			tracks := map[string]*LossTrack{c.Key(): trackOf(p, c, 20, tc.losses, tc.rtt)}
			f := Judge(p, c, time.Second, Options{Tracks: tracks})
			if f.Cause == nil || f.Cause.Name != tc.want {
				t.Fatalf("verdict %s cause %+v, want %s", f.Verdict.Verdict, f.Cause, tc.want)
			}
			if f.Fix == "" || f.Fix[:len(diagnose.ActorNetwork)] != diagnose.ActorNetwork {
				t.Errorf("fix %q does not start with the network's part", f.Fix)
			}
			// The same interval without samples: no cause.
			if g := Judge(p, c, time.Second, Options{}); g.Cause != nil {
				t.Errorf("without samples: cause %+v", g.Cause)
			}
			// At the path's known rate: its losses held nothing back.
			if g := Judge(p, c, time.Second, Options{Tracks: tracks, RateBps: f.ThroughputBps}); g.Cause != nil {
				t.Errorf("at the path's rate: cause %+v", g.Cause)
			}
		})
	}
}

func TestLossTrackCounts(t *testing.T) {
	p := sender()
	c := after(p, 10<<20, time.Second, 0, 0)
	c.Retrans = p.Retrans + 5
	tr := trackOf(p, c, 10, []int64{0, 2, 0, 3}, 200*time.Millisecond)
	var e diagnose.LossEvidence
	tr.Fill(&e)
	if e.LossEvents != 2 || e.Lost != 5 || e.Intervals != 10 || tr.MedianRTT() != 200*time.Millisecond {
		t.Errorf("evidence %+v median %s", e, tr.MedianRTT())
	}
	if segs := c.DataSegsOut - p.DataSegsOut; e.LossRate != 5/float64(segs) {
		t.Errorf("loss rate %g, want 5/%d", e.LossRate, segs)
	}
}

// A cubic flow that overflowed a shallow queue in slow start grows back
// for seconds without losing: flows' interval sees no loss, the RTT at
// its minimum, and the socket's earlier losses, far too many to leave
// the interval without one were they random, name a shallow buffer
// (measured: 100 ms x 500 Mbit/s, a 0.05 BDP queue: 82-98 Mbit/s, no
// loss in 4 s, named nothing before). A few earlier losses name none.
func TestJudgeQuietAfterBurst(t *testing.T) {
	const rtt = 100 * time.Millisecond
	p := sender()
	p.RTT, p.MinRTT, p.DataSegsOut, p.Retrans = rtt, rtt, 15_000, 288
	p.Cwnd, p.Ssthresh, p.Inflight = 1<<20, 900_000, 1<<20
	c := after(p, 49<<20, 4*time.Second, 0, 0)
	for _, tc := range []struct {
		name        string
		before, out int64
		queue       time.Duration
		want        string
	}{
		{"burst before", 288, 15_000, 0, diagnose.CauseShallowBuffer},
		{"a few before", 3, 15_000, 0, ""},
		// One segment lost in slow start, random loss's first, is no
		// burst however early it came (lab causes, 0.01% on 50 ms x
		// 100 Mbit/s, the flow at 92.5 Mbit/s over a 3.5 ms queue:
		// named shallow-buffer).
		{"one before, early", 1, 2_000, 3500 * time.Microsecond, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Retrans, c.Retrans = tc.before, tc.before
			c.DataSegsOut += tc.out - p.DataSegsOut
			p.DataSegsOut = tc.out
			c.RTT = rtt + tc.queue
			tracks := map[string]*LossTrack{c.Key(): trackOf(p, c, 20, nil, rtt+tc.queue)}
			f := Judge(p, c, 4*time.Second, Options{Tracks: tracks})
			got := ""
			if f.Cause != nil {
				got = f.Cause.Name
			}
			if got != tc.want {
				t.Fatalf("verdict %s, cause %+v; want %q", f.Verdict.Verdict, f.Cause, tc.want)
			}
		})
	}
}

// Each loss event is judged by the queue the sample before it showed
// (its smoothed RTT over the minimum): slow start's 40 segments at a full
// queue are the bottleneck's, and the single losses after it with no
// queue are random loss, where the average (8.5 a time) called them a
// burst; 7 a time with no queue are a shallow buffer's.
func TestLossTrackOnsets(t *testing.T) {
	minRTT := 50 * time.Millisecond
	track := func(rtts []time.Duration, losses []int64) diagnose.LossEvidence {
		tr := NewLossTrack(Sock{})
		var s Sock
		for i := range rtts {
			s.BytesAcked += 1 << 20
			s.DataSegsOut += 724
			s.Retrans += losses[i]
			s.RTT, s.MinRTT = rtts[i], minRTT
			tr.Add(s)
		}
		e := diagnose.LossEvidence{MinRTT: minRTT, LoadedRTT: 50500 * time.Microsecond, Bps: 40e6, MSS: 1448}
		tr.Fill(&e)
		return e
	}
	full, idle := 95*time.Millisecond, 50200*time.Microsecond
	e := track([]time.Duration{60 * time.Millisecond, full, idle, idle, idle, idle, idle, idle}, []int64{0, 0, 40, 0, 1, 0, 1, 1})
	if o := e.Onsets; o == nil || o.AtQueue != 1 || o.Low != 3 || o.LowLost != 3 || o.Under != 0 {
		t.Fatalf("onsets %+v", e.Onsets)
	}
	if c, _ := diagnose.LossCause(e); c.Name != diagnose.CauseRandomLoss {
		t.Errorf("random loss after slow start's overshoot: %q", c.Name)
	}
	rtts, losses := make([]time.Duration, 20), make([]int64, 20)
	for i := range rtts {
		rtts[i] = idle
	}
	losses[3], losses[9], losses[15] = 7, 7, 7
	e = track(rtts, losses)
	if c, _ := diagnose.LossCause(e); c.Name != diagnose.CauseShallowBuffer {
		t.Errorf("7 a time with no queue: %q", c.Name)
	}
}
