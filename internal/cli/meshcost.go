package cli

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/meshplan"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type meshCostArgs struct {
	sites, hubs, peers, streams, rounds int
	topology, path                      string
	interval, phase, timeout, scrape    units.Duration
	window, maxBytes                    units.Size
	maxRate                             units.Rate
	json                                bool
}

func newMeshCostCmd() *cobra.Command {
	var a meshCostArgs
	c := &cobra.Command{
		Use:   "mesh-cost --sites N --path RTT/RATE [flags]",
		Short: "Before deploying a probe mesh: each probe's length and bytes, how busy each target is, bytes a day",
		Long: `mesh-cost does the arithmetic of a fleet's probe mesh (longhaul exporter's
/probe, scheduled by Prometheus) before it is deployed: how long one probe
takes and what it moves on the path (a download and an upload on one
stream, then a download on --probe-streams streams, each phase 40 round
trips or --probe-phase, slow start included), how many probes each target
and each prober sees every --interval, whether one target's probes fit the
interval back to back (serve runs one test at a time and answers the
others busy, so they must), the shortest interval that fits, and the
bytes a day per target, through the busiest site's link and for the whole
mesh.

Topologies: full (every site probes every other), partial (each site
probes --peers others, so each is probed by --peers), hub (--hubs hubs
probe every other site; the spokes only run serve). The path is the one
probes cross: give the longest RTT for the time and the fastest rate for
the bytes, or run it per path. The bytes assume each stream reaches its
share of the path's rate; a window the hosts' buffers cap is --window
(longhaul calc tells it).`,
		Example: `  # 30 sites, full mesh, the shipped 5 min interval, 170 ms at 1 Gbit/s
  longhaul mesh-cost --sites 30 --interval 5m --path 170ms/1Gbit/s

  # the same sites as two hubs and their spokes, each probe capped at 100 MB a phase
  longhaul mesh-cost --sites 30 --topology hub --hubs 2 --path 170ms/1Gbit/s --probe-max-bytes 100MB

  # each site probing 3 others every 15 min, as JSON
  longhaul mesh-cost --sites 30 --topology partial --peers 3 --interval 15m --path 80ms/500Mbit/s --json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMeshCost(a, c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.IntVar(&a.sites, "sites", 0, "sites in the mesh, each running longhaul serve (2..10000; required)")
	f.StringVar(&a.topology, "topology", meshplan.Full, "who probes whom: full, partial (--peers) or hub (--hubs)")
	f.IntVar(&a.hubs, "hubs", 0, "with --topology hub: the hubs, which probe every other site")
	f.IntVar(&a.peers, "peers", 0, "with --topology partial: the sites each site probes")
	a.interval = units.Duration{D: 5 * time.Minute, Min: 10 * time.Second, Max: 24 * time.Hour}
	f.Var(&a.interval, "interval", "the probe job's scrape_interval (10s..24h)")
	f.StringVar(&a.path, "path", "", "RTT/RATE of the paths probes cross, e.g. 170ms/1Gbit/s (required)")
	f.Var(&a.window, "window", "the most one stream keeps in flight (what the hosts' buffers allow); default: enough for the path")
	f.IntVar(&a.streams, "probe-streams", meshplan.DefaultStreams, "the exporter's --probe-streams: a capacity phase on that many streams (0 or 1: none)")
	f.IntVar(&a.rounds, "probe-rounds", meshplan.DefaultRounds, "the exporter's --probe-rounds: a phase's length in round trips (at least 2 s)")
	a.phase = units.Duration{Min: 2 * time.Second, Max: time.Minute}
	f.Var(&a.phase, "probe-phase", "the exporter's --probe-phase: a fixed phase length instead of --probe-rounds (2s..1m)")
	a.maxRate = units.Rate{Min: 1e3, Max: 1e12}
	f.Var(&a.maxRate, "probe-max-rate", "the exporter's --probe-max-rate: the pace a probe asks")
	a.maxBytes = units.Size{Min: 1}
	f.Var(&a.maxBytes, "probe-max-bytes", "the exporter's --probe-max-bytes: the most one phase moves")
	a.timeout = units.Duration{D: meshplan.DefaultTimeout, Min: time.Second, Max: 5 * time.Minute}
	f.Var(&a.timeout, "probe-timeout", "the exporter's --probe-timeout")
	a.scrape = units.Duration{D: meshplan.DefaultTimeout, Min: time.Second, Max: 24 * time.Hour}
	f.Var(&a.scrape, "scrape-timeout", "the probe job's scrape_timeout (the probe's deadline is the smaller of it less 0.5 s and --probe-timeout)")
	f.BoolVar(&a.json, "json", false, "print JSON (schema longhaul.mesh-cost/v1)")
	return c
}

func (a meshCostArgs) input() (meshplan.Input, error) {
	if a.sites == 0 || a.path == "" {
		return meshplan.Input{}, usagef("mesh-cost needs the mesh and its path: --sites N --path RTT/RATE, e.g. --sites 30 --path 170ms/1Gbit/s")
	}
	rttText, rateText, ok := strings.Cut(a.path, "/")
	rtt, err1 := units.ParseDuration(rttText)
	rate, err2 := units.ParseRate(rateText)
	if !ok || err1 != nil || err2 != nil {
		return meshplan.Input{}, usagef("--path %q: write RTT/RATE, e.g. 170ms/1Gbit/s", a.path)
	}
	return meshplan.Input{Sites: a.sites, Topology: a.topology, Hubs: a.hubs, Peers: a.peers, Interval: a.interval.D,
		RTT: rtt, RateBps: rate, Window: a.window.N, Streams: a.streams, Rounds: a.rounds, Phase: a.phase.D,
		MaxRateBps: a.maxRate.Bps, MaxBytes: a.maxBytes.N, Timeout: min(a.timeout.D, a.scrape.D-500*time.Millisecond)}, nil
}

func runMeshCost(a meshCostArgs, w io.Writer) error {
	in, err := a.input()
	if err != nil {
		return err
	}
	if a.rounds < 1 {
		return usagef("--probe-rounds must be 1..1000, got %d", a.rounds)
	}
	p, err := meshplan.Estimate(in)
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(w, struct {
			Schema string `json:"schema"`
			meshplan.Plan
		}{"longhaul.mesh-cost/v1", p})
	}
	printMeshCost(w, in, p)
	return nil
}

func secs(s float64) string { return units.FormatDuration(time.Duration(s * float64(time.Second))) }

func printMeshCost(w io.Writer, in meshplan.Input, p meshplan.Plan) {
	every := secs(p.IntervalS)
	fmt.Fprintf(w, "%s: %d probes every %s.\n", meshShape(p), p.Paths, every)
	how := fmt.Sprintf("%d round trips", max(in.Rounds, 1))
	switch {
	case in.Phase > 0:
		how = "--probe-phase"
	case p.PhaseCut:
		how = fmt.Sprintf("cut from %d round trips to end within the probe's deadline, %s", in.Rounds, secs(in.Timeout.Seconds()))
	}
	fmt.Fprintf(w, "One probe over %s at %s: %d phases of %s (%s), about %s with its handshakes and pings:\n",
		units.FormatDuration(in.RTT), units.FormatRate(in.RateBps), len(p.Phases), secs(p.PhaseS), how, secs(p.ProbeS))
	for _, ph := range p.Phases {
		fmt.Fprintf(w, "  %-9s %2d stream(s)  %-12s %s\n", ph.Name, ph.Streams, units.FormatRate(ph.RateBps), units.FormatBytes(ph.Bytes))
	}
	fmt.Fprintf(w, "  %-35s %s\n", "a probe", units.FormatBytes(p.ProbeBytes))
	t := p.Target
	fmt.Fprintf(w, "The busiest target is probed %d times every %s: %s of probes, %.0f%% of the interval.\n", t.Probes, every, secs(float64(t.Probes)*p.ProbeS), 100*t.BusyShare)
	if p.Fits {
		fmt.Fprintf(w, "  Its probes fit the interval without overlap")
	} else {
		fmt.Fprintf(w, "  Its probes cannot all run without overlap: its serve runs one at a time and answers the others busy")
	}
	fmt.Fprintf(w, " (shortest interval that fits: %s; at most half busy, room for probes that collide to queue: %s).\n", secs(p.ShortestS), secs(p.SuggestedS))
	if t.Probes > 1 {
		fmt.Fprintf(w, "  A probe that finds its target busy waits for it within its deadline: %s to spare after its own test (%s).\n",
			secs(p.QueueS), queueAdvice(p))
	}
	fmt.Fprintf(w, "The busiest prober runs %d probes every %s (%.0f%% of the interval); the busiest site's link carries %d (%.0f%%), as prober and as target.\n",
		p.Prober.Probes, every, 100*p.Prober.BusyShare, p.Link.Probes, 100*p.Link.BusyShare)
	if p.Prober.BusyShare > 1 {
		fmt.Fprintf(w, "  Its probes overlap one another (the exporter runs up to --probe-concurrency at once) and share its link: one after another they need %s.\n", secs(p.ProberShortestS))
	}
	fmt.Fprintf(w, "Bytes a day: %s to the busiest target, %s through the busiest site's link, %s for the whole mesh.\n",
		units.FormatBytes(t.BytesPerDay), units.FormatBytes(p.Link.BytesPerDay), units.FormatBytes(p.MeshBytesPerDay))
}

func meshShape(p meshplan.Plan) string {
	switch p.Topology {
	case meshplan.Hub:
		return fmt.Sprintf("%d sites, hubs probing every other site", p.Sites)
	case meshplan.Partial:
		return fmt.Sprintf("%d sites, each probing %d others", p.Sites, p.Prober.Probes)
	}
	return fmt.Sprintf("A full mesh of %d sites", p.Sites)
}

func queueAdvice(p meshplan.Plan) string {
	if p.QueueS >= p.ProbeS {
		return "enough to wait for one probe ahead of it"
	}
	return fmt.Sprintf("less than one probe: --probe-timeout and a scrape_timeout of %s let it wait for one", secs(math.Ceil(2*p.ProbeS+1.5)))
}
