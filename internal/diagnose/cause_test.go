package diagnose

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestLossCause(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		e    LossEvidence
		want string // "" none
		has  []string
	}{
		// Measured on the path, 100 ms x 500 Mbit/s, cubic
		// (scripts/bench-causes.sh): 0.01% loss, 9 segments in 6 events,
		// the round trip +0.3 ms under load.
		{"0.01% random loss, no queue", LossEvidence{MinRTT: 100 * ms, LoadedRTT: 100*ms + 300*time.Microsecond, LossRate: 1.6e-4, LossEvents: 6, Lost: 9, Intervals: 80, Bps: 59e6, PeakBps: 95e6, MSS: 1448, CC: "cubic", Sender: "the server"},
			CauseRandomLoss, []string{"Mathis bound", "network: find the link", "sender: the server can use BBR", "N parallel streams"}},
		// A queue of 0.05 BDP: 204 segments lost in slow start's burst.
		{"shallow queue: one burst of 204", LossEvidence{MinRTT: 100 * ms, LoadedRTT: 100*ms + 400*time.Microsecond, LossRate: 2e-3, LossEvents: 2, Lost: 204, Intervals: 80, Bps: 96e6, PeakBps: 98e6, MSS: 1448, CC: "cubic"},
			CauseShallowBuffer, []string{"204 segments in 2 bursts", "network: give the bottleneck a queue of about one BDP", "pace"}},
		// 1.45% random loss at 40 Mbit/s: 5 segments per 100 ms interval
		// on average, 10 per interval that has any: random, not bursts.
		{"heavy random loss: several per interval", LossEvidence{MinRTT: 50 * ms, LoadedRTT: 50 * ms, LossRate: 0.0145, LossEvents: 20, Lost: 200, Intervals: 40, Bps: 40e6, MSS: 1448, CC: "cubic"},
			CauseRandomLoss, nil},
		{"shallow queue: a few ms of queue, single losses", LossEvidence{MinRTT: 100 * ms, LoadedRTT: 104 * ms, LossRate: 1e-3, LossEvents: 10, Lost: 12, Bps: 135e6, PeakBps: 470e6, MSS: 1448, CC: "cubic"},
			CauseShallowBuffer, nil},
		{"bufferbloat", LossEvidence{MinRTT: 50 * ms, LoadedRTT: 180 * ms, LossRate: 1e-3, LossEvents: 3, Lost: 90, Bps: 95e6, PeakBps: 96e6, MSS: 1448, CC: "cubic"},
			CauseBufferbloat, []string{"rose from 50 ms to 180 ms", "fq_codel"}},
		{"bufferbloat without loss", LossEvidence{MinRTT: 50 * ms, LoadedRTT: 180 * ms, Bps: 95e6, MSS: 1448, CC: "bbr"},
			CauseBufferbloat, nil},
		{"an ordinary bottleneck's queue (30% of the RTT)", LossEvidence{MinRTT: 100 * ms, LoadedRTT: 130 * ms, LossRate: 1e-3, LossEvents: 4, Lost: 40, Bps: 480e6, PeakBps: 490e6, MSS: 1448, CC: "cubic"}, "", nil},
		{"no loss, no queue", LossEvidence{MinRTT: 50 * ms, LoadedRTT: 50 * ms, Bps: 95e6, MSS: 1448}, "", nil},
		{"no RTT", LossEvidence{LossRate: 0.01, LossEvents: 1, Lost: 1, Bps: 1e6}, "", nil},
	}
	for _, c := range cases {
		got, ok := LossCause(c.e)
		if (c.want == "") != !ok || got.Name != c.want {
			t.Errorf("%s: %q (%v), want %q", c.name, got.Name, ok, c.want)
			continue
		}
		all := got.Text + "\n" + strings.Join(got.Fix, "\n")
		for _, h := range c.has {
			if !strings.Contains(all, h) {
				t.Errorf("%s: lacks %q:\n%s", c.name, h, all)
			}
		}
		if ok && len(got.Fix) == 0 {
			t.Errorf("%s: no fix", c.name)
		}
	}
	// A sender already on BBR is not told to use it.
	c, _ := LossCause(LossEvidence{MinRTT: 100 * ms, LoadedRTT: 100 * ms, LossRate: 1e-3, LossEvents: 5, Lost: 5, Bps: 50e6, PeakBps: 55e6, MSS: 1448, CC: "bbr"})
	if strings.Contains(strings.Join(c.Fix, " "), "use BBR") {
		t.Errorf("BBR advised to a BBR sender: %v", c.Fix)
	}
	// The Mathis bound of 0.1% at 100 ms and 1448 bytes: 4.5 Mbit/s.
	if m := c.Numbers["mathis_bps"]; m < 4.4e6 || m > 4.6e6 {
		t.Errorf("Mathis bound %g: %v", m, c.Numbers)
	}
}

func TestWindowScaleCause(t *testing.T) {
	c, ok := WindowScaleCause(ScaleEvidence{MinRTT: 50 * time.Millisecond, Bps: 10e6, PathBps: 94e6, Receiver: "the client"})
	if !ok || c.Name != CauseWindowScaleStripped {
		t.Fatalf("%+v %v", c, ok)
	}
	// 65,535 bytes per 50 ms: 10.49 Mbit/s; 94 Mbit/s needs 9 such streams.
	if got := c.Numbers["ceiling_bps"]; math.Abs(got-10.4856e6) > 1e3 {
		t.Errorf("ceiling %v", got)
	}
	if c.Numbers["streams"] != 9 || len(c.Fix) != 2 || !strings.HasPrefix(c.Fix[0], ActorNetwork+": ") || !strings.Contains(c.Fix[1], "9 parallel streams") {
		t.Errorf("fix %q, numbers %v", c.Fix, c.Numbers)
	}
	if !strings.Contains(c.Text, "the client can advertise at most 64 KB") {
		t.Errorf("text %q", c.Text)
	}
	// A path no faster than the ceiling: no streams to suggest.
	if c, _ := WindowScaleCause(ScaleEvidence{MinRTT: 50 * time.Millisecond, Bps: 9e6, PathBps: 9e6}); len(c.Fix) != 1 {
		t.Errorf("fix %q", c.Fix)
	}
	if _, ok := WindowScaleCause(ScaleEvidence{}); ok {
		t.Error("a cause without an RTT")
	}
}

func TestReorderCause(t *testing.T) {
	e := ReorderEvidence{Events: 12, Degree: 40, Spurious: 30, Retrans: 60, Segments: 60000, MinRTT: 50 * time.Millisecond, Bps: 30e6, Sender: "the server"}
	c, ok := ReorderCause(e)
	if !ok || c.Name != CauseReordering || c.Numbers["spurious_retransmissions"] != 30 || c.Numbers["retransmitted_share"] != 0.001 {
		t.Fatalf("%+v %v", c, ok)
	}
	if len(c.Fix) != 2 || !strings.HasPrefix(c.Fix[0], "network: keep each flow on one path") || !strings.Contains(c.Fix[1], "the server tolerates more") {
		t.Errorf("fix %q", c.Fix)
	}
	// Reordering seen, but the retransmissions were real losses: not the cause.
	e.Spurious = 5
	if _, ok := ReorderCause(e); ok {
		t.Error("5 of 60 spurious named reordering")
	}
	// No reordering seen: spurious retransmissions alone (a timeout too
	// early) are not reordering.
	e.Spurious, e.Events = 30, 0
	if _, ok := ReorderCause(e); ok {
		t.Error("no reordering events named reordering")
	}
}
