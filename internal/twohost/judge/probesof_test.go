package judge

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// The bbr phase's pings reach the loss evidence: its 90th percentile
// tells a policer's ceiling (no queue) from a link's.
func TestProbesOfOtherRTT(t *testing.T) {
	d := &testdoc.Doc{CCPhases: []testdoc.CCPhase{{CC: "bbr", Granted: true, ThroughputBps: 451e6, LoadedRTTP90S: 0.10244, LoadedRTTS: 0.10061},
		{CC: "reno", Granted: false, ThroughputBps: 460e6, LoadedRTTP90S: 0.2}}}
	pr := probesOf(d)
	if pr.otherBps != 451e6 || pr.otherRTT != 102440*time.Microsecond || pr.otherMid != 100610*time.Microsecond {
		t.Errorf("other %.4g at %s, want the granted bbr run's 451 Mbit/s at 102.44 ms", pr.otherBps, pr.otherRTT)
	}
}

// The idle pings' own spread is no queue: lab causes on a VM with
// stalls, a 50 Mbit/s policer on 50 ms x 100 Mbit/s (the run's numbers).
// Idle pings spread from 50.54 to 51.76 ms; paced at 62.7 Mbit/s the
// download carried 39.6 at a 90th percentile of 51.65 ms, +1.1 ms over
// the least idle ping: read as a queue, the short run said nothing and
// test named a shallow buffer. Against the idle pings' spread it is
// none, and the policer is named.
func TestProbesOfIdleJitter(t *testing.T) {
	d := &testdoc.Doc{
		RTT: testdoc.RTT{IdleS: []float64{0.050967449, 0.050737201, 0.050625817, 0.050544601, 0.050651963, 0.051134275, 0.051690342, 0.051755198, 0.051408331, 0.050656683}},
		PacedPhases: []testdoc.PacedPhase{{GrantedRateBps: 31.37e6, ThroughputBps: 30.26e6, LoadedRTTP90S: 0.052406},
			{GrantedRateBps: 62.74e6, ThroughputBps: 39.63e6, LossRate: 0.01106, LoadedRTTP90S: 0.051645}},
		CCPhases: []testdoc.CCPhase{{CC: "bbr", Granted: true, ThroughputBps: 41.83e6, LoadedRTTP90S: 0.059110, LoadedRTTS: 0.052392}},
		UDPPhase: &testdoc.UDPPhase{RateBps: 52.28e6, Sent: 9072, Received: 8223, LossRate: 0.0936, ArrivedBps: 47.39e6, QueueS: 0.000338},
	}
	pr := probesOf(d)
	if pr.idleRTT != 50544601*time.Nanosecond {
		t.Errorf("idle RTT %v, want the least idle ping", pr.idleRTT)
	}
	if q := pr.paced[1].LoadedRTT - pr.idleRTT; q >= time.Millisecond/2 {
		t.Errorf("the short paced run stood a %v queue over the idle pings' spread", q)
	}
	e := diagnose.LossEvidence{MinRTT: 50 * time.Millisecond, LoadedRTT: 50856294 * time.Nanosecond, IdleRTT: pr.idleRTT, Bps: 14.78e6,
		MSS: 1428, CC: "cubic", Sender: "the server", LossEvents: 4, Lost: 93, Intervals: 30, LossRate: 0.0226, PeakBps: 16.39e6,
		Onsets: &diagnose.Onsets{Low: 4, LowLost: 93},
		Paced:  pr.paced, BestOtherBps: pr.otherBps, OtherLoadedRTT: pr.otherRTT, OtherMedianRTT: pr.otherMid, Datagrams: pr.datagrams}
	c, ok := diagnose.LossCause(e)
	if !ok || c.Name != diagnose.CausePolicer {
		t.Errorf("named %q (%v), want the policer: %s", c.Name, ok, c.Text)
	}
}
