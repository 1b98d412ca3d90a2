package twohost

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// With bbr on the server the probes run it first and pace relative to
// the most a download carried by then; without it, at 2x and 4x what the
// download carried. A policer held cubic to 7 Mbit/s under a
// 250 Mbit/s rate on 100 ms x 500 Mbit/s: 2x and 4x of that never reach
// the policer, 1.5x what bbr carried (221 Mbit/s) does.
func TestLossProbePlan(t *testing.T) {
	d := 8 * time.Second
	type probe struct {
		Name   string
		CC     string
		Rate   float64
		OfBest float64
	}
	plan := func(ps []lossProbe) []probe {
		var out []probe
		for _, p := range ps {
			name := p.req.Name
			if name == wire.PhaseDownload {
				name = ""
			}
			out = append(out, probe{name, p.req.CC, math.Round(p.req.RateBps / 1e6), p.ofBest})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		bbrOK bool
		udpOK bool
		ccs   []string
		want  []probe
	}{
		{"bbr first", true, false, nil, []probe{{CC: "bbr"}, {Rate: 5, OfBest: probeBelow}, {Rate: 11, OfBest: probeAbove}}},
		{"bbr asked already", true, false, []string{"bbr"}, []probe{{Rate: 5, OfBest: probeBelow}, {Rate: 11, OfBest: probeAbove}}},
		{"datagrams last", true, true, nil, []probe{{CC: "bbr"}, {Rate: 5, OfBest: probeBelow}, {Rate: 11, OfBest: probeAbove}, {Name: wire.PhaseUDP, Rate: 9, OfBest: udpAbove}}},
		{"no bbr", false, false, nil, []probe{{Rate: 14}, {Rate: 28}}},
		{"no bbr, no datagrams", false, true, nil, []probe{{Rate: 14}, {Rate: 28}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, plan(lossProbePlan(7e6, tc.bbrOK, tc.udpOK, tc.ccs, d))); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// The probes' reference is the most an unpaced single-stream download
// carried, bbr's included when granted, not a paced or capacity phase.
func TestProbeBest(t *testing.T) {
	rtt := 100 * time.Millisecond
	down := phaseOf(wire.PhaseDownload, stream{port: 40000, rate: 7e6, rtt: rtt, flight: 90_000, ssthresh: 80_000})
	bbr := phaseOf(wire.PhaseDownload, stream{port: 40001, rate: 221e6, rtt: rtt, flight: 2_800_000, ssthresh: 1 << 30})
	bbr.AskedCC, bbr.Grant.CC = "bbr", "bbr"
	refused := phaseOf(wire.PhaseDownload, stream{port: 40002, rate: 300e6, rtt: rtt, flight: 3_800_000, ssthresh: 1 << 30})
	refused.AskedCC = "bbr" // a server without it sent with its default
	paced := phaseOf(wire.PhaseDownload, stream{port: 40003, rate: 400e6, rtt: rtt, flight: 5_000_000, ssthresh: 1 << 30})
	paced.AskedPace, paced.Grant.RateBps = 400e6, 400e6
	capacity := phaseOf(wire.PhaseCapacity, stream{port: 40004, rate: 450e6, rtt: rtt, flight: 5_600_000, ssthresh: 1 << 30})
	raw := rawWith(host("", ""), host("", ""), down, refused, paced, capacity)
	if got := probeBest(raw); math.Abs(got-7e6) > 0.5e6 {
		t.Errorf("without bbr: %.4g, want the download's 7 Mbit/s", got)
	}
	raw.Phases = append(raw.Phases, bbr)
	if got := probeBest(raw); math.Abs(got-221e6) > 5e6 {
		t.Errorf("with bbr: %.4g, want bbr's 221 Mbit/s", got)
	}
	// The datagram run's reference counts the paced run too (a paced
	// run carries up to a policer's rate where bbr may not), never the
	// capacity phase's streams.
	if got := probeCeiling(raw); math.Abs(got-400e6) > 10e6 {
		t.Errorf("ceiling %.4g, want the paced run's 400 Mbit/s", got)
	}
}

// The bbr phase's pings reach the loss evidence: its 90th percentile
// tells a policer's ceiling (no queue) from a link's.
func TestProbesOfOtherRTT(t *testing.T) {
	d := &Doc{CCPhases: []CCPhase{{CC: "bbr", Granted: true, ThroughputBps: 451e6, LoadedRTTP90S: 0.10244, LoadedRTTS: 0.10061},
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
	d := &Doc{
		RTT: RTT{IdleS: []float64{0.050967449, 0.050737201, 0.050625817, 0.050544601, 0.050651963, 0.051134275, 0.051690342, 0.051755198, 0.051408331, 0.050656683}},
		PacedPhases: []PacedPhase{{GrantedRateBps: 31.37e6, ThroughputBps: 30.26e6, LoadedRTTP90S: 0.052406},
			{GrantedRateBps: 62.74e6, ThroughputBps: 39.63e6, LossRate: 0.01106, LoadedRTTP90S: 0.051645}},
		CCPhases: []CCPhase{{CC: "bbr", Granted: true, ThroughputBps: 41.83e6, LoadedRTTP90S: 0.059110, LoadedRTTS: 0.052392}},
		UDPPhase: &UDPPhase{RateBps: 52.28e6, Sent: 9072, Received: 8223, LossRate: 0.0936, ArrivedBps: 47.39e6, QueueS: 0.000338},
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
