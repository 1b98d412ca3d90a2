package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The paced runs' evidence (paced.go): random loss whatever the rate,
// and pacing that cured a shallow buffer's losses.

// Random loss under a standing queue: on 50 ms x 100 Mbit/s with 0.01%
// loss and a 1-BDP drop-tail queue, cubic's single stream (71.2 Mbit/s)
// filled the queue between losses (pings +6.1 ms at the median), so its
// losses looked like an ordinary bottleneck's; paced at 70 Mbit/s, with
// no queue, the same download carried 40 while bbr carried 93.8: losses
// whatever the rate (lab causes, a8f4fcd, the run test named nothing).
// Paced runs that hold their pace keep it an ordinary bottleneck.
func TestLossCauseRandomUnderAQueue(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	e := LossEvidence{MinRTT: ms(50), IdleRTT: ms(50.3), LoadedRTT: ms(56.4), LossRate: 0.0006, LossEvents: 9, Lost: 44, Intervals: 80,
		Bps: 71.2e6, MSS: 1448, CC: "cubic", Sender: "the server", BestOtherBps: 93.8e6, OtherLoadedRTT: ms(61.5), ManyBps: 91.3e6,
		Paced: []PacedRun{{RateBps: 70.4e6, Bps: 40e6, LossRate: 0.0004, LoadedRTT: ms(50.6)}, {RateBps: 140.7e6, Bps: 51.5e6, LossRate: 0.0009, LoadedRTT: ms(63.8)}}}
	c, ok := LossCause(e)
	if !ok || c.Name != CauseRandomLoss || c.Numbers["paced_bps"] != 70.4e6 || !strings.Contains(c.Text, "whatever the rate") {
		t.Errorf("random loss under a queue: %s %v %q", c.Name, c.Numbers, c.Text)
	}
	held := e
	held.Paced = []PacedRun{{RateBps: 70.4e6, Bps: 70.3e6, LoadedRTT: ms(50.6)}, e.Paced[1]}
	if c, ok := LossCause(held); ok {
		t.Errorf("paced runs that held: %s, want no cause (an ordinary bottleneck's queue)", c.Name)
	}
	queuedRun := e
	queuedRun.Paced = []PacedRun{{RateBps: 70.4e6, Bps: 40e6, LossRate: 0.0004, LoadedRTT: ms(58)}, e.Paced[1]}
	if c, ok := LossCause(queuedRun); ok {
		t.Errorf("a paced run short at a queue: %s, want no cause", c.Name)
	}
}

// Random loss a paced run showed although it kept its pace: on 50 ms x
// 100 Mbit/s with 0.01% loss, cubic's single stream (74.5 Mbit/s) stood
// a queue of +9 ms at the median; paced at 70.6 Mbit/s with no queue the
// download carried 65.6 (93% of its pace) and lost 3 segments, while
// the datagrams paced above the path's rate found a 49.3 ms queue: a
// buffer that holds a paced flow's bursts, so nothing but random loss
// loses a paced run under the path's rate there (lab causes at 86f1ed2,
// the run test named nothing). The same paced run on a shallow buffer
// (datagrams: 2 ms) or at a policer (none) is no such evidence.
func TestLossCauseRandomKeptPaceOnADeepBuffer(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	e := LossEvidence{MinRTT: ms(49.955), IdleRTT: ms(50.59), LoadedRTT: ms(59.5), LossRate: 0.0004, LossEvents: 4, Lost: 20, Intervals: 80,
		Bps: 74.5e6, MSS: 1448, CC: "cubic", Sender: "the server", BestOtherBps: 94.09e6, OtherLoadedRTT: ms(87.2), OtherMedianRTT: ms(77.6), ManyBps: 92.83e6,
		Paced:     []PacedRun{{RateBps: 70.57e6, Bps: 65.61e6, LossRate: 6.5e-5, LoadedRTT: ms(50.59)}, {RateBps: 141.1e6, Bps: 46.4e6, LossRate: 0.0086, LoadedRTT: ms(50.59)}},
		Datagrams: &DatagramRun{RateBps: 117.6e6, Bps: 95.67e6, LossRate: 0.167, Queue: ms(49.3)}}
	c, ok := LossCause(e)
	if !ok || c.Name != CauseRandomLoss || c.Numbers["paced_bps"] != 70.57e6 || !strings.Contains(c.Text, "a 49.3 ms queue under datagrams") {
		t.Errorf("a paced run that kept pace and lost on a deep buffer: %s %v %q", c.Name, c.Numbers, c.Text)
	}
	for name, edit := range map[string]func(*LossEvidence){
		"shallow buffer": func(e *LossEvidence) {
			e.Datagrams = &DatagramRun{RateBps: 117.6e6, Bps: 94e6, LossRate: 0.2, Queue: ms(2)}
		},
		"policer":       func(e *LossEvidence) { e.Datagrams = &DatagramRun{RateBps: 117.6e6, Bps: 94e6, LossRate: 0.2} },
		"no datagrams":  func(e *LossEvidence) { e.Datagrams = nil },
		"no paced loss": func(e *LossEvidence) { e.Paced[0].LossRate = 0 },
		"paced queued":  func(e *LossEvidence) { e.Paced[0].LoadedRTT = ms(56) },
		"reordered":     func(e *LossEvidence) { e.Reordered = true },
	} {
		x := e
		x.Paced = slices.Clone(e.Paced)
		edit(&x)
		if c, _ := LossCause(x); c.Name == CauseRandomLoss {
			t.Errorf("%s: random-loss %q, want the paced run to be no evidence", name, c.Text)
		}
	}
	// At the path's rate the same run is random loss seen.
	at := e
	at.Bps = 92e6
	if s, ok := RandomLossSeen(at); !ok || s.Numbers["paced_bps"] != 70.57e6 {
		t.Errorf("seen at the path's rate: %v %v", ok, s.Numbers)
	}
}

// Pacing that cured the losses rules random loss out: on 50 ms x
// 100 Mbit/s with a 21-packet queue, slow start lost 32 segments at the
// queue and one later event 2 (no queue before it, then under the burst
// floor; here 1), which alone read as random loss; paced at 67.9 Mbit/s
// the download carried its pace without losing (lab causes at 05aa224,
// named random-loss).
func TestLossCauseCuredIsNotRandom(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	e := LossEvidence{MinRTT: ms(49.95), IdleRTT: ms(50.47), LoadedRTT: ms(50.64), LossRate: 0.00287, LossEvents: 2, Lost: 34, Intervals: 80,
		Bps: 21.9e6, MSS: 1448, CC: "cubic", Sender: "the server", BestOtherBps: 90.6e6, OtherLoadedRTT: ms(52.6), ManyBps: 87.8e6,
		Onsets: &Onsets{AtQueue: 1, Low: 1, LowLost: 1},
		Paced:  []PacedRun{{RateBps: 67.9e6, Bps: 67.9e6, LoadedRTT: ms(50.9)}, {RateBps: 135.9e6, Bps: 48.1e6, LossRate: 0.0046, LoadedRTT: ms(50.7)}}}
	c, ok := LossCause(e)
	if !ok || c.Name != CauseShallowBuffer || !strings.Contains(c.Text, "pacing removes the bursts") {
		t.Errorf("cured by pacing: %s %q, want shallow-buffer", c.Name, c.Text)
	}
	e.Paced[0] = PacedRun{RateBps: 67.9e6, Bps: 45e6, LossRate: 0.0003, LoadedRTT: ms(50.9)}
	if c, _ := LossCause(e); c.Name != CauseRandomLoss {
		t.Errorf("the paced run lost too: %s, want random-loss", c.Name)
	}
}
