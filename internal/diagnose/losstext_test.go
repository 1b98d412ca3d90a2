package diagnose

import (
	"strings"
	"testing"
	"time"
)

// TestLossLimitedWithoutRetransmissions: a live socket still recovering
// from earlier losses, nothing retransmitted in the interval judged, is
// loss-limited without the words of a lossy interval ("0 segments ...
// at this much loss the path itself must be fixed", issue 51).
func TestLossLimitedWithoutRetransmissions(t *testing.T) {
	var tl Timeline
	tl.StateTime[StateLoss] = 800 * time.Millisecond
	tl.StateTime[StateApp] = 200 * time.Millisecond
	in := Info{Bytes: 1 << 20, Duration: time.Second, RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond, CC: "bbr", Scope: "the last 1 s"}
	v := Diagnose(&tl, in)
	if v.Verdict != LossLimited || strings.Contains(v.Summary+v.Fix, "0 segments") || strings.Contains(v.Fix, "at this much loss") ||
		!strings.Contains(v.Summary, "nothing was retransmitted") {
		t.Fatalf("%s: %s / %s", v.Verdict, v.Summary, v.Fix)
	}
	in.Retrans, in.Segments = 30, 700
	if v := Diagnose(&tl, in); !strings.Contains(v.Fix, "30 segments retransmitted") {
		t.Errorf("with losses: %s", v.Fix)
	}
}

// TestWindowScaleStreams: the streams advised for a stripped window
// scale come from the path's rate; when the only rate is what the test's
// own streams carried under the same 64 KB windows (8 x 64 KB per round
// trip), the path's rate is not known and the advice says "more than 8",
// not "8" (issue 51: the link needed about 18).
func TestWindowScaleStreams(t *testing.T) {
	rtt := 50 * time.Millisecond
	ceiling := 65535 * 8 / rtt.Seconds()
	capped := ScaleEvidence{MinRTT: rtt, Bps: ceiling * 0.95, PathBps: 8 * ceiling * 0.97, Streams: 8, Receiver: "the client"}
	c, ok := WindowScaleCause(capped)
	if !ok || !strings.Contains(strings.Join(c.Fix, "; "), "more than 8 parallel streams") || c.Numbers["streams"] != 0 {
		t.Errorf("capped: %v %v", c.Fix, c.Numbers)
	}
	known := capped
	known.PathBps, known.Streams = 18*ceiling*0.98, 0 // --rate
	if c, _ := WindowScaleCause(known); c.Numbers["streams"] != 18 || !strings.Contains(strings.Join(c.Fix, "; "), "on 18 parallel streams") {
		t.Errorf("known: %v %v", c.Fix, c.Numbers)
	}
}

// TestShallowTextOfAnUpload: an upload judged with the loss probes run
// (they pace the download only) is not told to run them, and the queue
// its fix sizes is the path's, not the rate the losses held the flow to
// (issue 51: a policer at 252 Mbit/s read as a shallow buffer sized for
// 35-72 Mbit/s, with "test --loss-probes tells them apart" after
// --loss-probes was given).
func TestShallowTextOfAnUpload(t *testing.T) {
	e := LossEvidence{MinRTT: 50 * time.Millisecond, Bps: 50e6, PeakBps: 72e6, ManyBps: 252e6, Lost: 300, LossEvents: 20}
	f := shallowFacts{q: time.Millisecond, burst: 15, rtt: "50 ms", qd: "1 ms", sender: "the client", noQueue: true}
	c := shallowCause(e, map[string]float64{}, f)
	if !strings.Contains(c.Text, "test --loss-probes tells them apart") || !strings.Contains(c.Fix[0], "252 Mbit/s") {
		t.Errorf("not probed: %s / %s", c.Text, c.Fix[0])
	}
	e.ProbedOtherWay = true
	if c := shallowCause(e, map[string]float64{}, f); strings.Contains(c.Text, "test --loss-probes") || !strings.Contains(c.Text, "pace the download only") {
		t.Errorf("probed the other way: %s", c.Text)
	}
}
