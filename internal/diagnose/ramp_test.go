package diagnose

import (
	"strings"
	"testing"
	"time"
)

// A flow still speeding up, losing nothing, is slow start whatever its
// windows said; one that lost, or held its rate, keeps its verdict.
func TestRampIsSlowStart(t *testing.T) {
	tl := Timeline{}
	tl.StateTime[StateSndbuf] = 800 * time.Millisecond
	tl.StateTime[StateNetwork] = 200 * time.Millisecond
	in := Info{RTT: 170 * time.Millisecond, MinRTT: 170 * time.Millisecond, Bytes: 12e6, Duration: time.Second, Segments: 8000, MSS: 1448, Scale: ScaleKnown}
	for _, tc := range []struct {
		name string
		ramp *Ramp
		want string
	}{
		{"no ramp measured", nil, SndbufLimited},
		{"still speeding up", &Ramp{EarlyBps: 60e6, LateBps: 120e6, Sending: 1500 * time.Millisecond, RTT: 170 * time.Millisecond, Cut: "phases cut to 2 s"}, SlowStart},
		{"speeding up after a loss", &Ramp{EarlyBps: 60e6, LateBps: 120e6, Retrans: 3}, SndbufLimited},
		{"level", &Ramp{EarlyBps: 140e6, LateBps: 150e6}, SndbufLimited},
	} {
		in := in
		in.Ramp = tc.ramp
		v := Diagnose(&tl, in)
		if v.Verdict != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, v.Verdict, tc.want)
		}
		if v.Verdict == SlowStart && (!strings.Contains(v.Summary, "60 Mbit/s, then 120 Mbit/s") || !strings.Contains(v.Summary, "9 round trips") ||
			!strings.Contains(v.Summary, "cut to 2 s") || !strings.Contains(v.Fix, "--probe-timeout")) {
			t.Errorf("%s: %q / %q", tc.name, v.Summary, v.Fix)
		}
	}
}
