package twohost

import (
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// The loss probes (ClientOptions.LossProbes) after a download that lost
// segments: with bbr on the server first, when it has it, then the
// download paced below and above the most a download carried so far
// (bbr's rate, which sits at a policer's or a link's rate), so that one
// run is under whatever ceiling the path has and one above it. A
// policer holds a loss-based flow far below its rate (measured: cubic
// carried 7 Mbit/s through a 250 Mbit/s policer with a 64 KB burst on
// 100 ms), so paces of a few times what that flow carried never reach
// it; without bbr they are all there is (probeTimes).
//
// Then, when the server answers datagram runs (Caps.UDP), datagrams
// paced at udpAbove the most any download carried, the paced ones too
// (probeCeiling), for udpProbeLength: a queue at the ceiling
// stands full under them, where a policer drops their excess and queues
// nothing (package wire's udpwire.go). A paced TCP download above a shallow queue backs
// off after each loss and leaves it empty between losses, so its pings
// cannot tell the two apart (measured: a 21-packet queue at 50 ms x
// 100 Mbit/s, +0.2 ms in the pings' median, as at a policer).
const (
	probeBelow     = 0.75
	probeAbove     = 1.5
	udpAbove       = 1.25
	udpProbeLength = 2 * time.Second
)

// probeTimes are the paces, in times what the download carried, when
// the server has no bbr to tell the path's rate first.
var probeTimes = []float64{2, 4}

// lossProbe is a probe phase; a paced one with ofBest set is paced at
// that share of the most a download carried before it runs
// (probeBest), not at RateBps.
type lossProbe struct {
	req    wire.PhaseReq
	ofBest float64
}

// lossProbePlan are the probes after a download that lost segments and
// carried carried (bits/s): bbr when the server has it (bbrOK) and the
// test's own --cc-phase list (ccs) lacks it, each phase d long, and the
// datagram run when bbr gives the ceiling and the server answers them
// (udpOK).
func lossProbePlan(carried float64, bbrOK, udpOK bool, ccs []string, d time.Duration) []lossProbe {
	paced := func(rate, ofBest float64) lossProbe {
		return lossProbe{req: wire.PhaseReq{Name: wire.PhaseDownload, Streams: 1, DurationS: d.Seconds(), RateBps: rate}, ofBest: ofBest}
	}
	hasBBR := slices.Contains(ccs, "bbr")
	var out []lossProbe
	if bbrOK && !hasBBR {
		out = append(out, lossProbe{req: wire.PhaseReq{Name: wire.PhaseDownload, Streams: 1, DurationS: d.Seconds(), CC: "bbr"}})
	}
	if bbrOK || hasBBR {
		out = append(out, paced(probeBelow*carried, probeBelow), paced(probeAbove*carried, probeAbove))
		if udpOK {
			out = append(out, lossProbe{req: wire.PhaseReq{Name: wire.PhaseUDP, Streams: 1, DurationS: min(d, udpProbeLength).Seconds(), RateBps: udpAbove * carried}, ofBest: udpAbove})
		}
		return out
	}
	for _, x := range probeTimes {
		out = append(out, paced(x*carried, 0))
	}
	return out
}

// serverHasBBR: the server's snapshot lists bbr among its available
// congestion controls.
func serverHasBBR(raw *judge.Raw) bool {
	return raw.ServerSnap != nil && slices.Contains(strings.Fields(raw.ServerSnap.Sysctls["net.ipv4.tcp_available_congestion_control"]), "bbr")
}

// probeCeiling is the most a single-stream download carried so far,
// paced or not, with any congestion control: a run paced above a ceiling
// carries up to it where bbr may carry less (measured: bbr 37.4 Mbit/s
// through a 50 Mbit/s policer with a 64 KB burst, the run paced at 56
// Mbit/s 44.8; datagrams at 1.25 times bbr's rate went through whole and
// told nothing). The datagram run is paced above it.
func probeCeiling(raw *judge.Raw) float64 {
	best := 0.0
	for _, p := range raw.Phases {
		if p.Grant.Name == wire.PhaseDownload && p.Grant.Streams == 1 {
			best = max(best, judge.AggregateRate(p.Server))
		}
	}
	return best
}

// probeBest is the most a single-stream download the server did not
// pace carried so far (with its default congestion control, or one
// asked and granted): the reference of the paced probes.
func probeBest(raw *judge.Raw) float64 {
	best := 0.0
	for _, p := range raw.Phases {
		if p.Grant.Name != wire.PhaseDownload || p.AskedPace > 0 || p.Grant.RateBps > 0 || (p.AskedCC != "" && p.Grant.CC != p.AskedCC) {
			continue
		}
		best = max(best, judge.AggregateRate(p.Server))
	}
	return best
}
