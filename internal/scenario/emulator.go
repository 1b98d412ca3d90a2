package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// KindPing is an idle path probed with ping (the emulator's RTT error).
const KindPing = "ping"

// CasePath is a case's own path, for scenarios that cross several (the
// emulator benchmark); cases without one run on the scenario's path.
type CasePath struct {
	RTT        time.Duration
	RateBps    float64 // on the wire; 0 = unlimited
	QueueBytes int64   // the bottleneck queue; only with a rate
	// Veth is the raw kernel path: a veth pair, no emulator.
	Veth bool
	// Knobs are the path's impairments as emulate flags,
	// "down-policer=50Mbit/s/64KB" (emupath's Link.Apply).
	Knobs []string
	// ServerCPU limits the server's commands, in cores (0: none).
	ServerCPU float64
	// IPv6 gives the ends IPv6 addresses too; the case's peers use them.
	IPv6 bool
	// Competing is how many bulk cubic downloads (iperf3, the server's
	// namespace sending to the client's) share the path with the case's
	// own traffic for the whole run: competing traffic that responds to
	// loss, as other users' transfers do.
	Competing int
}

// PathsLabel names the paths the cases run on: "50 ms / 100 Mbit/s",
// or "3 paths (50 ms / 100 Mbit/s, ...)" when they differ.
func (s *Scenario) PathsLabel() string {
	var names []string
	for _, c := range s.Cases {
		p := s.PathOf(c)
		name := units.FormatDuration(p.RTT) + " / " + units.FormatRate(p.RateBps)
		if p.RateBps == 0 {
			name = units.FormatDuration(p.RTT) + ", no rate limit"
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	switch len(names) {
	case 0:
		return units.FormatDuration(s.RTT) + " / " + units.FormatRate(s.RateBps)
	case 1:
		return names[0]
	}
	return fmt.Sprintf("%d paths (%s)", len(names), strings.Join(names, ", "))
}

// PathOf is the path case c runs on.
func (s *Scenario) PathOf(c Case) CasePath {
	if c.Path != nil {
		return *c.Path
	}
	return CasePath{RTT: s.RTT, RateBps: s.RateBps, QueueBytes: s.Queue}
}

// The emulator benchmark's cases: the matrix the benchmark has
// always measured, and above 1 Gbit/s at 200 ms the ladder that finds
// the highest rate this machine carries validly.
var (
	emuRTTs   = []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}
	emuRates  = []float64{100e6, 1e9, 0}
	emuLadder = []float64{2.5e9, 5e9, 10e9}
)

// Targets of the emulator benchmark (issue 16; results in bench/emulator/).
const (
	emuGoodputTarget  = 0.95 // of the goodput ceiling, rate-limited
	emuCPUTarget      = 25.0 // % of a core at 200 ms x 1 Gbit/s
	emuUnlimitedFloor = 5e9  // goodput at 200 ms without a rate limit
	emuIdleErrTarget  = 0.2e-3
	emuPingCount      = 20
)

func rateName(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	return units.FormatRate(bps)
}

// rateID is a rate in a case ID: 100M, 1G, 2.5G, unlimited.
func rateID(bps float64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps >= 1e9:
		return strings.TrimSuffix(fmt.Sprintf("%g", bps/1e9), ".0") + "G"
	default:
		return fmt.Sprintf("%gM", bps/1e6)
	}
}

// emuBuffer is the endpoints' buffer maximum for a path: 2 BDP (the
// window is 0.66-0.8 of tcp_rmem's max on this kernel, so 2 BDP fills
// the link without overflowing a 1-BDP queue), rounded up to 64 KiB and
// at most 512 MiB; 4 MiB at 0 ms; 256 MiB without a rate limit.
func emuBuffer(p CasePath) int64 {
	switch {
	case p.RateBps == 0:
		return 256 * mib
	case p.RTT == 0:
		return 4 * mib
	}
	b := int64(2 * p.RateBps / 8 * p.RTT.Seconds())
	const g = 64 * kib
	return min((b+g-1)/g*g, 512*mib)
}

// emuQueue is the bottleneck queue: one BDP, or 1000 packets at 0 ms
// (a BDP of one packet cannot hold one TSO burst).
func emuQueue(rtt time.Duration, rate float64) int64 {
	if rate == 0 {
		return 0
	}
	if rtt == 0 {
		return 1000 * (linkemu.MTU + linkemu.DefaultOverhead)
	}
	return linkemu.BDPQueue(1, rate, rtt)
}

// emuTimes are iperf3's -t and -O (slow start left out) for an RTT:
// longer paths and faster rates need longer to leave slow start.
func emuTimes(rtt time.Duration, rate float64, quick bool) (t, omit time.Duration) {
	sec := time.Second
	switch {
	case rtt == 0:
		t, omit = 8*sec, 2*sec
	case rtt <= 50*time.Millisecond:
		t, omit = 12*sec, 3*sec
	default:
		t, omit = 15*sec, 5*sec
	}
	if quick {
		t, omit = (t / 2).Truncate(sec), max((omit/2).Truncate(sec), sec)
	}
	if rate > 1e9 && rtt >= 100*time.Millisecond {
		omit += 3 * sec // log2(BDP / initcwnd) round trips of slow start
	}
	return t, omit
}

func expandEmulator(s *Scenario, p Params) error {
	if p.RTT != 0 || p.RateBps != 0 || p.Loss != 0 || p.Queue != 0 || p.Duration != 0 {
		return inputf("the emulator benchmark runs its own paths and run lengths: --rtt, --rate, --loss, --queue and --duration do not apply (pick cases with --case)")
	}
	ceilT := 10 * time.Second
	if s.Quick {
		ceilT = 3 * time.Second
	}
	s.Cases = append(s.Cases, Case{ID: "ceiling", Series: "ceiling", Label: "raw veth (ceiling)", Kind: KindIperf,
		Duration: ceilT, Streams: 1, Path: &CasePath{Veth: true},
		Notes: []string{"the kernel's own path between the namespaces: what no data plane in between can beat"}})
	rtts, rates := emuRTTs, emuRates
	ladder := emuLadder
	if s.Quick {
		rtts, rates, ladder = []time.Duration{200 * time.Millisecond}, []float64{1e9, 0}, nil
	}
	add := func(rtt time.Duration, rate float64) {
		cp := CasePath{RTT: rtt, RateBps: rate, QueueBytes: emuQueue(rtt, rate)}
		buf := emuBuffer(cp)
		t, omit := emuTimes(rtt, rate, s.Quick)
		series := "limited"
		if rate == 0 {
			series = "unlimited"
		}
		pings := max(int((t-2*time.Second)/(100*time.Millisecond)), 10)
		c := Case{ID: fmt.Sprintf("load-%dms-%s", rtt.Milliseconds(), rateID(rate)), Series: series,
			Label: fmt.Sprintf("%d ms x %s", rtt.Milliseconds(), rateName(rate)), X: rate, Kind: KindIperf,
			Duration: t, Omit: omit, Streams: 1, Ping: pings, Path: &cp,
			Client: []sysctl.Setting{{Key: "net.ipv4.tcp_rmem", Value: fmt.Sprintf("4096 131072 %d", buf)}},
			Server: []sysctl.Setting{{Key: "net.ipv4.tcp_wmem", Value: fmt.Sprintf("4096 16384 %d", buf)}},
			Notes: []string{fmt.Sprintf("iperf3 -R -t %d -O %d, endpoint buffers %s, queue %s, ping alongside", int(t.Seconds()), int(omit.Seconds()),
				units.FormatIEC(float64(buf)), queueText(cp))}}
		s.Cases = append(s.Cases, c)
	}
	for _, rtt := range rtts {
		for _, rate := range rates {
			add(rtt, rate)
		}
	}
	for _, rate := range ladder {
		add(200*time.Millisecond, rate)
	}
	idle := emuRTTs
	if s.Quick {
		idle = idle[1:]
	}
	for _, rtt := range idle {
		s.Cases = append(s.Cases, Case{ID: fmt.Sprintf("idle-%dms", rtt.Milliseconds()), Series: "idle",
			Label: fmt.Sprintf("idle %d ms", rtt.Milliseconds()), X: rtt.Seconds(), Kind: KindPing, Ping: emuPingCount,
			Path: &CasePath{RTT: rtt}, Notes: []string{fmt.Sprintf("ping -c %d -i 0.1 on the idle path", emuPingCount)}})
	}
	s.Columns = []results.Column{
		{Metric: "iperf_bps", Label: "goodput", Unit: "bps"},
		{Metric: "goodput_pct", Label: "% of goodput ceiling", Unit: "pct"},
		{Metric: "emu_cpu_pct", Label: "emulator CPU % of a core", Unit: "pct"},
		{Metric: "host_cpu_pct", Label: "machine CPU % of a core", Unit: "pct"},
		{Metric: "lateness_p99_s", Label: "lateness p99 (data)", Unit: "s"},
		{Metric: "ping_err_mean_s", Label: "RTT error mean", Unit: "s"},
		{Metric: "ping_err_p99_s", Label: "RTT error p99", Unit: "s"},
	}
	s.Charts = []results.Chart{
		{ID: "goodput-limited", Title: "Goodput through the emulator, % of the rate's goodput ceiling", Kind: "bar",
			XLabel: "path", YLabel: "% of goodput ceiling", YUnit: "pct", Metric: "goodput_pct", Series: []string{"limited"},
			Note: "iperf3 -R, one cubic flow, after -O; goodput ceiling = rate x 1448/1538. Whiskers: min..max over valid runs."},
		{ID: "goodput-unlimited", Title: "Goodput without a rate limit, against the raw veth", Kind: "bar",
			XLabel: "path", YLabel: "goodput", YUnit: "bps", Metric: "iperf_bps", Series: []string{"ceiling", "unlimited"},
			Note: "Unlimited: the endpoints' 256 MiB buffers bound the window at 200 ms (window/RTT)."},
		{ID: "cpu", Title: "Emulator CPU, % of one core", Kind: "bar",
			XLabel: "path", YLabel: "% of a core", YUnit: "pct", Metric: "emu_cpu_pct", Series: []string{"limited", "unlimited"},
			Note: "The emulator process's CPU time over its run: it includes the receiving end's TCP stack, which runs in the writer's thread (TUN writes)."},
		{ID: "idle-rtt", Title: "RTT error on the idle path (ping - configured RTT)", Kind: "bar",
			XLabel: "path", YLabel: "mean error", YUnit: "s", Metric: "ping_err_mean_s", Series: []string{"idle"}},
		{ID: "load-rtt", Title: "RTT error under load (ping alongside the download)", Kind: "bar",
			XLabel: "path", YLabel: "mean error", YUnit: "s", Metric: "ping_err_mean_s", Series: []string{"limited", "unlimited"},
			Note: "Under a rate limit it includes the bottleneck queue's standing delay, which the 1-BDP queue and 2-BDP buffers make up to one RTT."},
	}
	return nil
}

func queueText(p CasePath) string {
	if p.RateBps == 0 {
		return "none (no rate limit)"
	}
	return units.FormatIEC(float64(p.QueueBytes))
}

// emulator is the benchmark's verdict: each target, then the emulator's
// cost per Gbit/s and the highest rate carried validly at 200 ms.
func (hs headlineSums) emulator() []string {
	var out []string
	pass := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	if v, ok := hs.med("ceiling", "iperf_bps"); ok {
		out = append(out, fmt.Sprintf("ceiling: raw veth carries %s", units.FormatRate(v)))
	}
	if g, ok := hs.med("load-200ms-1G", "goodput_pct"); ok {
		out = append(out, fmt.Sprintf("%s 200 ms x 1 Gbit/s: goodput %.1f%% of the goodput ceiling (target >= %.0f%%)", pass(g >= 100*emuGoodputTarget), g, 100*emuGoodputTarget))
	}
	if c, ok := hs.med("load-200ms-1G", "emu_cpu_pct"); ok {
		out = append(out, fmt.Sprintf("%s 200 ms x 1 Gbit/s: emulator %.1f%% of a core (target <= %.0f%%)", pass(c <= emuCPUTarget), c, emuCPUTarget))
	}
	if g, ok := hs.med("load-200ms-unlimited", "iperf_bps"); ok {
		out = append(out, fmt.Sprintf("%s 200 ms unlimited: %s (target >= %s)", pass(g >= emuUnlimitedFloor), units.FormatRate(g), units.FormatRate(emuUnlimitedFloor)))
	}
	for _, ms := range []int{50, 200} {
		id := fmt.Sprintf("idle-%dms", ms)
		if e, ok := hs.med(id, "ping_err_mean_s"); ok {
			out = append(out, fmt.Sprintf("%s idle %d ms: mean RTT error %.3f ms (target <= %.1f ms)", pass(e <= emuIdleErrTarget), ms, e*1e3, emuIdleErrTarget*1e3))
		}
	}
	for _, sm := range hs.sums {
		if sm.Invalid > 0 {
			out = append(out, fmt.Sprintf("%s: %d of %d runs invalid (the emulator overloaded or the peers failed)", sm.Label, sm.Invalid, sm.Invalid+sm.N))
		}
	}
	// Cost per Gbit/s and the highest valid rate, over the rate-limited
	// cases at 200 ms (in rate order, as expanded).
	type point struct{ rate, goodput, cpu, host float64 }
	var best float64
	var pts []point
	for _, sm := range hs.sums {
		if !strings.HasPrefix(sm.Case, "load-200ms-") || sm.Series != "limited" || sm.N == 0 {
			continue
		}
		if sm.Invalid == 0 && sm.Median["goodput_pct"] >= 100*emuGoodputTarget && sm.X > best {
			best = sm.X
		}
		g, okG := sm.Median["iperf_bps"]
		c, okC := sm.Median["emu_cpu_pct"]
		if okG && okC && g > 0 && sm.X >= 1e9 {
			pts = append(pts, point{sm.X, g, c, sm.Median["host_cpu_pct"]})
		}
	}
	if len(pts) > 0 {
		var per []string
		for _, p := range pts {
			per = append(per, fmt.Sprintf("%s %.0f%%", rateName(p.rate), p.cpu/(p.goodput/1e9)))
		}
		l := fmt.Sprintf("emulator cost at 200 ms, %% of a core per Gbit/s of goodput: %s", strings.Join(per, ", "))
		if n := len(pts); n > 1 {
			// The marginal cost between the two fastest rates: per-frame
			// wake-ups are shared by more bytes as the rate rises, so the
			// average overstates what a further Gbit/s costs.
			a, b := pts[n-2], pts[n-1]
			if d := (b.goodput - a.goodput) / 1e9; d > 0 {
				l += fmt.Sprintf("; from %s to %s each further Gbit/s cost %.1f%% of a core", rateName(a.rate), rateName(b.rate), (b.cpu-a.cpu)/d)
			}
		}
		last := pts[len(pts)-1]
		if last.host > 0 {
			l += fmt.Sprintf("; at %s the whole machine (emulator, both iperf3 and both TCP stacks) used %.0f%% of a core", rateName(last.rate), last.host)
		}
		out = append(out, l)
	}
	if best > 0 {
		out = append(out, fmt.Sprintf("highest rate carried validly at 200 ms (every run valid, >= %.0f%% of goodput): %s", 100*emuGoodputTarget, rateName(best)))
	}
	return out
}
