package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// KindCauses is one run of the path-causes matrix: `longhaul test`
// (download, then the paced loss probes) against `longhaul serve`, the
// server's end captured for `longhaul analyze`, and `longhaul flows` on
// the server's sockets during the single-stream download; each tool's
// named cause is recorded against the failure the path was made to have.
const KindCauses = "causes"

// The tools the matrix judges, in the order its tables show them.
const (
	ToolTest    = "test"
	ToolAnalyze = "analyze"
	ToolFlows   = "flows"
)

// CauseTools lists the tools the matrix judges.
func CauseTools() []string { return []string{ToolTest, ToolAnalyze, ToolFlows} }

// Clean is the truth of a case whose path has no failure: no cause may be
// named.
const Clean = "clean"

// failure is one failure the matrix puts on a path: the cause the tools
// must name (diagnose's vocabulary) and the emulate flags that make it.
type failure struct {
	name, label string
	knobs       func(sh shape) []string
	// cpu-bound: the server's commands get this share of a core, on a
	// path of at least 1 Gbit/s (the CPU must bind below the link).
	serverCPU float64
	// competing: bulk cubic downloads sharing the path (CasePath.Competing).
	competing int
}

// failures are the matrix's rows. A policer at half the link's rate
// with a 64 KB burst; reordering of 5% of the segments by 30 ms; the
// SYNs' window scale option stripped on the way to the server; the
// server's full-size packets dropped without a word; another user's
// bulk cubic download sharing the bottleneck for the whole run. (The
// emulator's own unresponsive cross traffic at 30% of the link is a
// slower link to every end-to-end measure: it moves whole GSO
// super-packets, so no packet dispersion shows the link's rate between
// its packets, and 8 streams carry no more than one.)
var failures = []failure{
	{name: Clean, label: "clean (1 BDP drop-tail queue)"},
	{name: diagnose.CauseRandomLoss, label: "random loss 0.01%", knobs: fixed("down-loss=0.01%")},
	{name: diagnose.CauseShallowBuffer, label: "shallow buffer (0.05 BDP)", knobs: shallowQueue},
	{name: diagnose.CauseBufferbloat, label: "bufferbloat (8 BDP queue)", knobs: fixed("down-queue=8bdp")},
	{name: diagnose.CausePolicer, label: "policer at half the rate, 64 KB burst", knobs: func(sh shape) []string {
		return []string{"down-policer=" + flagRate(sh.rate/2) + "/64KB"}
	}},
	{name: diagnose.CauseReordering, label: "reordering (5% held 30 ms)", knobs: fixed("down-reorder=5%/30ms")},
	{name: diagnose.CauseWindowScaleStripped, label: "window scale stripped by a middlebox", knobs: fixed("up-middlebox=wscale=strip")},
	{name: diagnose.CauseCPUBound, label: "server held to 0.01 of a core (1 Gbit/s link)", serverCPU: 0.01},
	{name: diagnose.CausePMTUBlackHole, label: "PMTU black hole (1400-byte link, no ICMP)", knobs: fixed("down-mtu=1400/blackhole")},
	{name: diagnose.CauseSharedBottleneck, label: "a competing cubic download sharing the link", competing: 1},
}

func fixed(knobs ...string) func(shape) []string { return func(shape) []string { return knobs } }

// shallowQueue is a queue of 0.05 BDP counted in full-size packets (at
// least 2): a "0.05bdp" queue is floored at linkemu.MinBDPQueue (100
// packets), which on 50 ms x 100 Mbit/s is 0.37 BDP, and cubic then
// loses only in slow start and fills the path (measured: 94 of 94
// Mbit/s, test named nothing).
func shallowQueue(sh shape) []string {
	bdp := sh.rate / 8 * sh.rtt.Seconds()
	n := max(int(math.Ceil(0.05*bdp/float64(linkemu.MTU+linkemu.DefaultOverhead))), 2)
	return []string{"down-queue=" + strconv.Itoa(n) + "p"}
}

// shape is a path of the matrix.
type shape struct {
	rtt  time.Duration
	rate float64
}

// causeShapes are the matrix's default paths; the user's --rtt/--rate
// make it one.
var causeShapes = []shape{{50 * time.Millisecond, 100e6}, {100 * time.Millisecond, 500e6}}

// CausesEstimate is how long a run of test takes: the single-stream
// download, the 8 streams for as long, the paced probes, set-up.
func CausesEstimate(c Case) time.Duration {
	return 3*c.Duration + 10*time.Second
}

// quickFailures are the rows of the quick matrix (CI's subset).
var quickFailures = []string{Clean, diagnose.CauseRandomLoss, diagnose.CausePolicer}

// causesBuffer is both ends' tcp_rmem/tcp_wmem: large enough that no
// host buffer limits any case (the 128 MiB).
const causesBuffer = "4096 131072 134217728"

func expandCauses(s *Scenario, p Params) error {
	if p.Loss != 0 || p.Queue != 0 {
		return inputf("the causes matrix makes each case's loss and queue itself: --loss and --queue do not apply (pick cases with --case)")
	}
	dur := 8 * time.Second
	if s.Quick {
		dur = 4 * time.Second
	}
	if p.Duration != 0 {
		dur = p.Duration
	}
	if dur < 2*time.Second || dur > 60*time.Second {
		return inputf("run length %v out of range: test's download runs 2s..60s", dur)
	}
	shapes := causeShapes
	if p.RTT != 0 || p.RateBps != 0 || s.Quick {
		shapes = []shape{{s.RTT, s.RateBps}}
	}
	big := []sysctl.Setting{{Key: "net.ipv4.tcp_rmem", Value: causesBuffer}, {Key: "net.ipv4.tcp_wmem", Value: causesBuffer}}
	var names []string
	for _, sh := range shapes {
		series := units.FormatDuration(sh.rtt) + " x " + units.FormatRate(sh.rate)
		names = append(names, series)
		for i, f := range failures {
			if s.Quick && !slices.Contains(quickFailures, f.name) {
				continue
			}
			cp := &CasePath{RTT: sh.rtt, RateBps: sh.rate, IPv6: p.IPv6}
			if f.knobs != nil {
				cp.Knobs = f.knobs(sh)
			}
			if f.serverCPU > 0 {
				cp.RateBps, cp.ServerCPU = max(sh.rate, 1e9), f.serverCPU
			}
			cp.Competing = f.competing
			s.Cases = append(s.Cases, Case{ID: shapeID(sh) + "-" + f.name, Series: series, Label: f.label, X: float64(i),
				Kind: KindCauses, Truth: f.name, Duration: dur, Client: big, Server: big, Path: cp,
				Notes: []string{"emulate " + strings.Join(append([]string{"--rtt " + cp.RTT.String(), "--rate " + flagRate(cp.RateBps)}, flagsOf(cp)...), " ")}})
		}
	}
	s.Charts = []results.Chart{{
		ID: "single", Title: "One stream's download on each failure (test)", Kind: "bar",
		XLabel: "failure", YLabel: "one stream", YUnit: "bps", Metric: "single_bps", Model: "path_rate_bps", Series: names,
		Note: "longhaul test's single-stream download over each emulated failure, 128 MiB buffers at both ends, cubic. Dots: the link's goodput, the path rate test should report.",
	}}
	s.Columns = []results.Column{{Metric: "single_bps", Label: "one stream (test)", Unit: "bps"}, {Metric: "path_rate_bps", Label: "path rate (test)", Unit: "bps"}}
	return nil
}

// flagsOf is the emulate flags of a case's failure.
func flagsOf(cp *CasePath) []string {
	var out []string
	for _, k := range cp.Knobs {
		name, value, _ := strings.Cut(k, "=")
		out = append(out, "--"+name+" "+value)
	}
	if cp.ServerCPU > 0 {
		out = append(out, fmt.Sprintf("--server-cpu %g", cp.ServerCPU))
	}
	if cp.IPv6 {
		out = append(out, "--ipv6")
	}
	if cp.Competing > 0 {
		out = append(out, fmt.Sprintf("(and %d competing cubic download(s): iperf3 -C cubic from the server's namespace)", cp.Competing))
	}
	return out
}

// shapeID is a path in a case ID: 50ms-100M.
func shapeID(sh shape) string { return sh.rtt.String() + "-" + rateID(sh.rate) }

// flagRate is a rate as emulate's flags take it: 250Mbit/s.
func flagRate(bps float64) string { return fmt.Sprintf("%gMbit/s", bps/1e6) }

// Judgements of a tool's named cause against a case's truth.
const (
	Right  = "right"
	Weaker = "weaker"
	Wrong  = "wrong"
)

// weaker are the documented weaker verdicts a tool gives where it cannot
// see the cause ("*": any): a capture at the server sees the client's
// SYN without the option, so scaling was not negotiated, not that a
// middlebox removed it, and tcp_info says only that the socket runs
// without scaling; neither a capture nor tcp_info shows another
// process's CPU; without paced runs a policer's bursts of drops with no
// queue look like a shallow buffer's, and a policer that drops one
// segment at the end of each window's burst (its bucket, 64 KB, below
// the flow's window: the lab's runs at 15 Mbit/s under a 50 Mbit/s
// policer) looks like random loss to tcp_info: single losses with no
// queue, the same loss rate and Mathis bound (the cause's text says so,
// and its fixes are the network's and pacing, as for a policer); one
// connection's packets or socket do not show the other users' flows,
// only the queue they keep standing (bufferbloat, or a bottleneck with
// its queue: nothing named); a download, or flows' window of a few
// seconds of it, may run at the link's rate where random loss did not
// hold it (AtLinkRate).
var weaker = map[[2]string][]string{
	{ToolAnalyze, diagnose.CausePolicer}:             {diagnose.CauseShallowBuffer},
	{ToolFlows, diagnose.CausePolicer}:               {diagnose.CauseShallowBuffer, diagnose.CauseRandomLoss},
	{ToolAnalyze, diagnose.CauseWindowScaleStripped}: {diagnose.FlagNoWindowScaling},
	{ToolFlows, diagnose.CauseWindowScaleStripped}:   {diagnose.FlagNoWindowScaling},
	{ToolAnalyze, diagnose.CauseCPUBound}:            {"*"},
	{ToolFlows, diagnose.CauseCPUBound}:              {"*"},
	{ToolAnalyze, diagnose.CauseSharedBottleneck}:    {NoCause, diagnose.CauseBufferbloat},
	{ToolFlows, diagnose.CauseSharedBottleneck}:      {NoCause, diagnose.CauseBufferbloat},
	{ToolFlows, diagnose.CauseRandomLoss}:            {AtLinkRate},
	{ToolAnalyze, diagnose.CauseRandomLoss}:          {AtLinkRate},
}

// NoCause is what a tool named when it named nothing.
const NoCause = "-"

// AtLinkRate is what flows or analyze named when it named nothing while
// the flow it read carried at least 90% of the link's goodput (flows over
// its window, analyze over the whole download): a limit that did not hold
// the flow there, such as random loss between losses (0-2 in the 4 s
// window at 0.01% and 50 ms x 100 Mbit/s; a download that carried 87.5
// of 94 Mbit/s, slow start included, lost its 848 segments at the top of
// the queue it filled), has nothing in tcp_info or in the packets to
// show.
const AtLinkRate = "at-link-rate"

// JudgeCause says whether tool named a case whose path had truth's
// failure right, with a documented weaker verdict, or wrong. On a clean
// path nothing may be named; a capture or a socket may flag the clean
// one-BDP drop-tail queue's delay as bufferbloat, test may not (it
// measures the idle RTT itself).
func JudgeCause(tool, truth, named string) string {
	if truth == Clean {
		if named == NoCause || named == AtLinkRate || (tool != ToolTest && named == diagnose.CauseBufferbloat) {
			return Right
		}
		return Wrong
	}
	if named == truth {
		return Right
	}
	if w := weaker[[2]string{tool, truth}]; slices.Contains(w, "*") || slices.Contains(w, named) {
		return Weaker
	}
	return Wrong
}
