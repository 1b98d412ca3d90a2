package tcpflow

import (
	"testing"
	"time"

	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// exchanges plays n requests from the client, captured at the server,
// each answered at once: with two segments (the client acknowledges
// both at once, prompt(k) later) or, when lone(k), with one, which the
// client acknowledges only when its delayed-ACK timer fires, 45 ms later.
func exchanges(c *ct.Conv, n int, lone func(int) bool, prompt func(int) time.Duration) {
	for k := range n {
		c.Data(client, 200)
		c.Advance(100 * time.Microsecond)
		wait := prompt(k)
		if lone(k) {
			c.Data(server, 500)
			wait = 45 * time.Millisecond
		} else {
			c.Data(server, 1448)
			c.Data(server, 1448)
		}
		c.Advance(wait)
		c.AckAll(client)
		c.Advance(300 * time.Millisecond)
	}
}

// The receiver's delayed ACKs of one-segment answers (45 ms against a
// 5 ms path) are not bufferbloat: no bufferbloat flag on a flow whose
// high RTT samples are lone ACKs. RTTs that rise on ACKs of two segments
// (a queue filling) keep the flag.
func TestBufferbloatFlagNotDelayedACKs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lone   func(int) bool
		prompt func(int) time.Duration
		want   bool
	}{
		{"delayed ACKs of one-segment answers", func(k int) bool { return k%2 == 1 }, func(int) time.Duration { return 5 * time.Millisecond }, false},
		{"rising RTT, prompt ACKs", func(int) bool { return false }, func(k int) time.Duration { return 5*time.Millisecond + time.Duration(k)*4*time.Millisecond }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv()
			handshake(c, stdSyn, stdSyn, 5*time.Millisecond, "server")
			exchanges(c, 20, tc.lone, tc.prompt)
			f := analyze(t, c, Options{}).Flows[0]
			d := dirOf(t, f, f.Server)
			if got := hasFlag(d.Verdict.Flags, diagnose.FlagBufferbloat); got != tc.want {
				t.Errorf("bufferbloat flag %v, want %v (RTT min %.1f ms, median %.1f ms, p90 %.1f ms, %d samples)",
					got, tc.want, 1e3*d.RTT.AckMin, 1e3*d.RTT.AckMedian, 1e3*d.RTT.AckP90, d.RTT.AckSamples)
			}
		})
	}
}
