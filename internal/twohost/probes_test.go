package twohost

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	down := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 7e6, RTT: rtt, Flight: 90_000, Ssthresh: 80_000})
	bbr := phaseOf(wire.PhaseDownload, stream{Port: 40001, Rate: 221e6, RTT: rtt, Flight: 2_800_000, Ssthresh: 1 << 30})
	bbr.AskedCC, bbr.Grant.CC = "bbr", "bbr"
	refused := phaseOf(wire.PhaseDownload, stream{Port: 40002, Rate: 300e6, RTT: rtt, Flight: 3_800_000, Ssthresh: 1 << 30})
	refused.AskedCC = "bbr" // a server without it sent with its default
	paced := phaseOf(wire.PhaseDownload, stream{Port: 40003, Rate: 400e6, RTT: rtt, Flight: 5_000_000, Ssthresh: 1 << 30})
	paced.AskedPace, paced.Grant.RateBps = 400e6, 400e6
	capacity := phaseOf(wire.PhaseCapacity, stream{Port: 40004, Rate: 450e6, RTT: rtt, Flight: 5_600_000, Ssthresh: 1 << 30})
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
