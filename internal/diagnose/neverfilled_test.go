package diagnose

import (
	"testing"
	"time"
)

// TestNeverFilledLossLimited: a capture's cwnd-bound flow that lost a
// few segments at random and never built a queue (the RTT's 90th
// percentile within a quarter of its least) never filled the bottleneck:
// loss-limited, not a bottleneck, though its loss rate is far under
// LossRate (issue 51's captures: 0.03% random loss, cubic, 80 ms x 150
// Mbit/s, 10 segments lost, 36.9 Mbit/s, RTT 80.0/81.4 ms). A queue that
// stood, a flow far past its losses' bound (bbr at the link's rate), or
// too few RTT samples to tell keep the bottleneck.
func TestNeverFilledLossLimited(t *testing.T) {
	var tl Timeline
	tl.StateTime[StateNetwork] = 9 * time.Second
	tl.StateTime[StateSlowStart] = time.Second
	in := Info{Bytes: 46_100_000, Duration: 10 * time.Second, MSS: 1448, RTT: 81400 * time.Microsecond, MinRTT: 80 * time.Millisecond,
		HighRTT: 81400 * time.Microsecond, RTTSamples: 120, Retrans: 10, RetransBytes: 14480, Segments: 31_800}
	if v := Diagnose(&tl, in); v.Verdict != LossLimited {
		t.Fatalf("no queue, random losses: %s (%s)", v.Verdict, v.Summary)
	}
	for name, mod := range map[string]func(*Info){
		"a queue stood":     func(in *Info) { in.HighRTT = 110 * time.Millisecond },
		"bbr at the link":   func(in *Info) { in.Bytes, in.Retrans, in.RetransBytes = 168_000_000, 27, 27*1448 },
		"few RTT samples":   func(in *Info) { in.RTTSamples = 8 },
		"the queue's drops": func(in *Info) { in.RetransQueued = in.RetransBytes },
		"at --rate":         func(in *Info) { in.RateBps = 38e6 },
	} {
		x := in
		mod(&x)
		if v := Diagnose(&tl, x); v.Verdict != Bottleneck {
			t.Errorf("%s: %s", name, v.Verdict)
		}
	}
}
