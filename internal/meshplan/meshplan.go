// Package meshplan is the arithmetic of a probe mesh before it is
// deployed: for N sites probing each other (a full mesh, a partial one,
// hubs and spokes) every interval, how long one probe takes and what it
// moves (phase by phase, slow start included, as `longhaul exporter`'s
// probes run them), how busy the busiest target and prober are, whether
// one target's probes fit the interval without overlap, and the bytes a
// day. Pure: no I/O.
package meshplan

import (
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Topologies: who probes whom.
const (
	Full    = "full"    // every site probes every other
	Partial = "partial" // site i probes the Peers sites after it (i+1 .. i+Peers, wrapping)
	Hub     = "hub"     // the Hubs hubs probe every other site; spokes only serve
)

// Defaults, as the exporter's probes run.
const (
	DefaultRounds  = 40
	DefaultStreams = 4
	DefaultTimeout = 30 * time.Second // the shipped scrape timeout
	MaxSites       = 10000
	// scrapeMargin is what the exporter leaves of a scrape's timeout.
	scrapeMargin = 500 * time.Millisecond
	// busyTarget is the share of the interval the suggested interval
	// keeps a target busy: room for probes whose scrapes collide to queue.
	busyTarget = 0.5
)

// Input is the mesh and its path.
type Input struct {
	Sites      int
	Topology   string
	Hubs       int // Hub
	Peers      int // Partial
	Interval   time.Duration
	RTT        time.Duration
	RateBps    float64 // the path's rate on the wire
	Window     int64   // most one stream keeps in flight (the hosts' buffers); 0: enough for the path
	Streams    int     // --probe-streams: > 1 adds the capacity phase
	Rounds     int     // a phase is Rounds round trips, at least twohost.MinPhase ...
	Phase      time.Duration
	MaxRateBps float64       // --probe-max-rate
	MaxBytes   int64         // --probe-max-bytes, per phase
	Timeout    time.Duration // a probe's deadline: min(--probe-timeout, the scrape timeout - 0.5 s)
}

// Phase is one phase of a probe.
type Phase struct {
	Name    string  `json:"name"`
	Streams int     `json:"streams"`
	RateBps float64 `json:"rate_bps"` // the payload rate once slow start is over
	Bytes   float64 `json:"bytes"`
}

// Load is what one site sees each interval in one role.
type Load struct {
	Probes      int     `json:"probes"`     // per interval
	BusyShare   float64 `json:"busy_share"` // probes x probe length / interval
	BytesPerDay float64 `json:"bytes_per_day"`
}

// Plan is the estimate.
type Plan struct {
	Sites           int     `json:"sites"`
	Topology        string  `json:"topology"`
	Paths           int     `json:"probes_per_interval"` // prober -> target pairs
	IntervalS       float64 `json:"interval_s"`
	PhaseS          float64 `json:"phase_s"`
	PhaseCut        bool    `json:"phase_cut"` // shortened to fit the deadline
	ProbeS          float64 `json:"probe_s"`
	Phases          []Phase `json:"phases"`
	ProbeBytes      float64 `json:"probe_bytes"`
	Target          Load    `json:"busiest_target"`
	Prober          Load    `json:"busiest_prober"`
	Link            Load    `json:"busiest_site_link"` // as prober and as target
	Fits            bool    `json:"fits"`              // the busiest target's probes fit the interval back to back
	ShortestS       float64 `json:"shortest_interval_s"`
	ProberShortestS float64 `json:"prober_shortest_interval_s"` // the busiest prober's probes one after another
	SuggestedS      float64 `json:"suggested_interval_s"`       // the busiest target busy at most half the time
	QueueS          float64 `json:"queue_s"`                    // the most a probe can wait for a busy target within its deadline
	MeshBytesPerDay float64 `json:"mesh_bytes_per_day"`
}

func inputErr(format string, a ...any) error { return badinput.Errorf(format, a...) }

// Validate checks the input: one line naming the flag when it is wrong.
func (in Input) Validate() error {
	switch {
	case in.Sites < 2 || in.Sites > MaxSites:
		return inputErr("--sites must be 2..%d, got %d", MaxSites, in.Sites)
	case in.Topology != Full && in.Topology != Partial && in.Topology != Hub:
		return inputErr("--topology must be full, partial or hub, got %q", in.Topology)
	case in.Topology == Hub && (in.Hubs < 1 || in.Hubs >= in.Sites):
		return inputErr("--topology hub needs --hubs 1..%d (fewer hubs than sites), got %d", in.Sites-1, in.Hubs)
	case in.Topology != Hub && in.Hubs != 0:
		return inputErr("--hubs is for --topology hub")
	case in.Topology == Partial && (in.Peers < 1 || in.Peers >= in.Sites):
		return inputErr("--topology partial needs --peers 1..%d (the sites each one probes), got %d", in.Sites-1, in.Peers)
	case in.Topology != Partial && in.Peers != 0:
		return inputErr("--peers is for --topology partial")
	case in.Interval < 10*time.Second || in.Interval > 24*time.Hour:
		return inputErr("--interval must be 10s..24h, got %s", in.Interval)
	case in.RTT <= 0 || in.RTT > 10*time.Second:
		return inputErr("--path: the RTT must be over 0 and at most 10s, got %s", in.RTT)
	case !(in.RateBps >= 1e5 && in.RateBps <= 1e12):
		return inputErr("--path: the rate must be 100kbit/s..1Tbit/s, got %g bit/s", in.RateBps)
	case in.Streams < 0 || in.Streams > wire.MaxStreams:
		return inputErr("--probe-streams must be 0..%d, got %d", wire.MaxStreams, in.Streams)
	case in.Rounds < 0 || in.Rounds > 1000:
		return inputErr("--probe-rounds must be 1..1000, got %d", in.Rounds)
	case in.Phase != 0 && (in.Phase < twohost.MinPhase || in.Phase > time.Minute):
		return inputErr("--probe-phase must be %s..1m, got %s", twohost.MinPhase, in.Phase)
	case in.Timeout < 0 || in.Timeout > 5*time.Minute:
		return inputErr("the probe's deadline must be at most 5m, got %s", in.Timeout)
	case in.MaxBytes < 0 || in.MaxRateBps < 0 || in.Window < 0:
		return inputErr("--probe-max-bytes, --probe-max-rate and --window cannot be negative")
	}
	return nil
}

func (in Input) withDefaults() Input {
	if in.Rounds == 0 {
		in.Rounds = DefaultRounds
	}
	if in.Timeout == 0 {
		in.Timeout = DefaultTimeout - scrapeMargin
	}
	return in
}

// loads are the probes each interval: in all (prober -> target pairs),
// of the busiest target, of the busiest prober, and through the busiest
// site's link (as prober and as target).
func (in Input) loads() (paths, target, prober, link int) {
	n := in.Sites
	switch in.Topology {
	case Partial:
		k := in.Peers
		return n * k, k, k, 2 * k
	case Hub:
		// A spoke is probed by every hub; a hub probes every other
		// site and is probed by the other hubs.
		h := in.Hubs
		return h * (n - 1), h, n - 1, n - 1 + h - 1
	}
	return n * (n - 1), n - 1, n - 1, 2 * (n - 1)
}

// phases are the probe's phases as the exporter runs them: a download
// and an upload on one stream, then a download on Streams streams.
func (in Input) phases() []Phase {
	ps := []Phase{{Name: wire.PhaseDownload, Streams: 1}, {Name: wire.PhaseUpload, Streams: 1}}
	if in.Streams > 1 {
		ps = append(ps, Phase{Name: wire.PhaseCapacity, Streams: in.Streams})
	}
	return ps
}

// phaseLength is a phase's length: the fixed Phase, or Rounds round
// trips (at least twohost.MinPhase) cut, as the client cuts them, to end
// within the probe's deadline; cut says it was.
func (in Input) phaseLength(n int) (d time.Duration, cut bool, err error) {
	if in.Phase > 0 {
		if t := twohost.TestLength(n, in.Phase, in.RTT); t > in.Timeout {
			return 0, false, inputErr("--probe-phase %s: %d phases take about %s on this path, past the probe's deadline of %s: raise the scrape timeout and --probe-timeout, or shorten the phases",
				in.Phase, n, t.Round(100*time.Millisecond), in.Timeout)
		}
		return in.Phase, false, nil
	}
	d = max(time.Duration(in.Rounds)*in.RTT, twohost.MinPhase)
	left := in.Timeout - twohost.TestLength(0, 0, in.RTT) - twohost.DeadlineSlack
	per := left/time.Duration(n) - (twohost.TestLength(1, 0, in.RTT) - twohost.TestLength(0, 0, in.RTT))
	if per >= d {
		return d, false, nil
	}
	if per < twohost.MinPhase {
		return 0, false, inputErr("a probe of this path needs about %s (%d phases of at least %s and the handshakes), past its deadline of %s: raise the scrape timeout and --probe-timeout",
			twohost.TestLength(n, twohost.MinPhase, in.RTT).Round(100*time.Millisecond), n, twohost.MinPhase, in.Timeout)
	}
	return per.Truncate(100 * time.Millisecond), true, nil
}

// phaseRate is the payload rate a phase of length d on streams streams
// settles at: the path's (its goodput), the exporter's caps (a pace), and
// each stream's window.
func (in Input) phaseRate(streams int, d time.Duration) float64 {
	r := pathmodel.Goodput(in.RateBps)
	if in.MaxRateBps > 0 {
		r = min(r, in.MaxRateBps)
	}
	if in.MaxBytes > 0 {
		r = min(r, float64(in.MaxBytes)*8/d.Seconds())
	}
	if in.Window > 0 {
		r = min(r, float64(streams)*pathmodel.WindowCeiling(float64(in.Window), in.RTT))
	}
	return r
}

// streamBytes is what one stream moves in d at rateBps once slow start,
// from the initial window doubling each round trip, has reached the
// window the rate needs.
func streamBytes(rateBps float64, d, rtt time.Duration) float64 {
	w := rateBps / 8 * rtt.Seconds()
	iw := float64(pathmodel.DefaultInitCwnd * pathmodel.DefaultMSS)
	k := float64(pathmodel.SlowStartRounds(w, 0, 0))
	r := d.Seconds() / rtt.Seconds()
	if r <= k {
		f := math.Floor(r)
		return iw*(math.Exp2(f)-1) + (r-f)*iw*math.Exp2(f)
	}
	return iw*(math.Exp2(k)-1) + (r-k)*w
}

// Estimate is the mesh's cost.
func Estimate(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	in = in.withDefaults()
	phases := in.phases()
	d, cut, err := in.phaseLength(len(phases))
	if err != nil {
		return Plan{}, err
	}
	probe := twohost.TestLength(len(phases), d, in.RTT)
	p := Plan{Sites: in.Sites, Topology: in.Topology, IntervalS: in.Interval.Seconds(), PhaseS: d.Seconds(), PhaseCut: cut,
		ProbeS: probe.Seconds(), QueueS: max(in.Timeout-probe, 0).Seconds()}
	for _, ph := range phases {
		ph.RateBps = in.phaseRate(ph.Streams, d)
		ph.Bytes = float64(ph.Streams) * streamBytes(ph.RateBps/float64(ph.Streams), d, in.RTT)
		p.ProbeBytes += ph.Bytes
		p.Phases = append(p.Phases, ph)
	}
	paths, target, prober, link := in.loads()
	p.Paths = paths
	perDay := (24 * time.Hour).Seconds() / p.IntervalS
	load := func(n int) Load {
		return Load{Probes: n, BusyShare: float64(n) * p.ProbeS / p.IntervalS, BytesPerDay: float64(n) * perDay * p.ProbeBytes}
	}
	p.Target, p.Prober, p.Link = load(target), load(prober), load(link)
	busy := float64(target) * p.ProbeS
	p.Fits = busy <= p.IntervalS
	p.ShortestS = math.Ceil(busy)
	p.ProberShortestS = math.Ceil(float64(prober) * p.ProbeS)
	p.SuggestedS = roundUp(busy / busyTarget)
	p.MeshBytesPerDay = float64(paths) * perDay * p.ProbeBytes
	return p, nil
}

// roundUp rounds an interval up to what people write: seconds under a
// minute, minutes under an hour, then 5 minutes.
func roundUp(s float64) float64 {
	switch {
	case s <= 60:
		return math.Ceil(s)
	case s <= 3600:
		return math.Ceil(s/60) * 60
	}
	return math.Ceil(s/300) * 300
}
