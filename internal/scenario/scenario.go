package scenario

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// Params are the user's choices for one lab invocation. Zero fields take
// the scenario's defaults (see [Expand]).
type Params struct {
	RTT      time.Duration
	RateBps  float64 // on the wire
	Loss     float64 // fraction per segment
	Queue    int64   // bytes; 0 means one BDP
	Repeat   int
	Quick    bool
	CC       string        // congestion control of both ends; "" means cubic
	Duration time.Duration // length of a timed run (buffers, longrtt)
	// ClientSysctls and ServerSysctls are set in every run's namespaces
	// before the case's own settings, which win on the same key.
	ClientSysctls, ServerSysctls []sysctl.Setting
	// IPv6: the causes matrix runs its tools over IPv6.
	IPv6 bool

	// verify holds what ExpandVerify was given.
	verify *verifyInput
}

// Facts are what expansion needs to know about the host, gathered by the
// caller so that [Expand] stays pure (see [FactsFrom]).
type Facts struct {
	Kernel pathmodel.Version
	// HostRmem and HostWmem are this host's tcp_rmem/tcp_wmem: new
	// namespaces inherit them, so an end the case does not set has them.
	HostRmem, HostWmem pathmodel.Triple
	// CoreRmemMax and CoreWmemMax are the global net.core.rmem_max and
	// wmem_max, which clamp SO_RCVBUF/SO_SNDBUF (iperf3 -w, nginx rcvbuf=).
	CoreRmemMax, CoreWmemMax int64
	// Host is the machine as recorded in results headers.
	Host results.Host
	// Snapshot is the host state longhaul plan judges; the scenarios'
	// "longhaul plan" profile is plan.Make of it. Nil leaves the profile
	// out.
	Snapshot *snapshot.Snapshot
}

// FactsFrom takes what expansion needs from a host snapshot, the same
// one `longhaul plan` uses, so the lab's plan profile is that command's
// plan.
func FactsFrom(snap *snapshot.Snapshot, host results.Host) (Facts, error) {
	f := Facts{Kernel: snap.Version(), Host: host, Snapshot: snap}
	var ok bool
	if f.HostRmem, ok = snap.Triple("net.ipv4.tcp_rmem"); !ok {
		return f, inputf("the host snapshot has no readable net.ipv4.tcp_rmem")
	}
	if f.HostWmem, ok = snap.Triple("net.ipv4.tcp_wmem"); !ok {
		return f, inputf("the host snapshot has no readable net.ipv4.tcp_wmem")
	}
	f.CoreRmemMax, _ = snap.Int("net.core.rmem_max")
	f.CoreWmemMax, _ = snap.Int("net.core.wmem_max")
	return f, nil
}

// PlanSysctls returns longhaul's plan for a path (wire rate) as the
// namespace sysctls both ends get, in key order, and a one-line
// description.
func (f Facts) PlanSysctls(rtt time.Duration, rateBps float64, flows int) ([]sysctl.Setting, string, error) {
	p, err := plan.Make(f.Snapshot, plan.Request{RTT: rtt, RateBps: rateBps, Flows: flows, Role: plan.Both})
	if err != nil {
		return nil, "", err
	}
	set, desc := NamespaceSysctls(p)
	if desc == "" {
		desc = "no change: this host's settings already cover the path"
	}
	return set, "longhaul plan: " + desc, nil
}

// NamespaceSysctls are a plan's changes a namespace can hold, in key
// order, and the same as "key=value, ..." text.
func NamespaceSysctls(p plan.Plan) ([]sysctl.Setting, string) {
	ns := plan.NamespaceSysctls(p)
	keys := slices.Sorted(maps.Keys(ns))
	set := make([]sysctl.Setting, 0, len(keys))
	text := make([]string, 0, len(keys))
	for _, k := range keys {
		set = append(set, sysctl.Setting{Key: k, Value: ns[k]})
		text = append(text, k+"="+ns[k])
	}
	return set, strings.Join(text, ", ")
}

// Kinds of run: what the runner does on the path.
const (
	KindDownload = "download" // nginx serves a big file, curl downloads it for a fixed time
	KindObject   = "object"   // curl fetches one object of a given size on a new connection
	KindIperf    = "iperf"    // iperf3 -R with N streams for a fixed time
	KindUpload   = "upload"   // curl POSTs a body to nginx
)

// Case is one setting of a scenario: what to set on each end and what to
// run. It is a plain value; the runner executes it Repeat times.
type Case struct {
	ID     string
	Series string
	Label  string
	X      float64
	Kind   string
	// Client and Server are namespace sysctls, set after the topology's
	// defaults.
	Client, Server []sysctl.Setting
	// InitCwnd and InitRwnd (segments, 0 = kernel default) go on the
	// server's and the client's route to the peer.
	InitCwnd, InitRwnd int
	Duration           time.Duration // timed kinds
	Bytes              int64         // object or upload size
	Streams            int           // iperf3 -P
	Window             int64         // iperf3 -w (SO_RCVBUF and SO_SNDBUF), 0 = none
	RcvBuf             int64         // nginx listen rcvbuf=, 0 = none
	Capture            bool          // keep a pcap of the run
	Notes              []string
	// Path, when set, is this case's own path instead of the
	// scenario's (see [Scenario.PathOf]).
	Path *CasePath
	// Omit is iperf3's -O: the first seconds (slow start) left out of
	// its result, run on top of Duration.
	Omit time.Duration
	// Ping is how many pings (100 ms apart) go alongside an iperf run,
	// or alone in a KindPing run; 0 none.
	Ping int
	// Truth is the failure a causes case's path has (diagnose's name of
	// it, or Clean): what its tools must name.
	Truth string
}

// Scenario is an expanded scenario: the path and its cases.
type Scenario struct {
	Name, Title, Seed string
	RTT               time.Duration
	RateBps           float64
	Loss              float64
	Queue             int64 // bytes, resolved (one BDP if not given)
	Repeat            int
	Quick             bool
	CC                string
	Cases             []Case
	Charts            []results.Chart
	// TCPInfoCase names the case whose first run the report draws over
	// time.
	TCPInfoCase string
	// Columns, if set, are the metrics the tables show per case
	// instead of the first chart's metric beside the model.
	Columns []results.Column
	Facts   Facts
}

// GoodputBps is the TCP payload rate of the path's wire rate.
func (s *Scenario) GoodputBps() float64 { return pathmodel.Goodput(s.RateBps) }

// scenarioDef holds a scenario's defaults and its expansion.
type scenarioDef struct {
	title, seed   string
	rtt           time.Duration
	rate          float64
	repeat, quick int // repeats in full and quick mode
	expand        func(s *Scenario, p Params) error
}

var scenarios = map[string]scenarioDef{
	"buffers": {
		title: "Throughput vs TCP buffer size (tcp_rmem/tcp_wmem) on a long fat path",
		seed:  "buffers-6x-http-downloads: 200 ms, 1 Gbit/s, 3-4 MB/s with Ubuntu defaults, 6x with 64 MB buffers",
		rtt:   200 * time.Millisecond, rate: 1e9, repeat: 3, quick: 1,
		expand: expandBuffers,
	},
	"initcwnd": {
		title: "Short transfers: time to last byte vs object size, initcwnd and initrwnd",
		seed:  "initcwnd-initrwnd-short-transfers: a 17 kB page over 50 ms takes 4-6 round trips until initcwnd/initrwnd 20",
		rtt:   50 * time.Millisecond, rate: 100e6, repeat: 5, quick: 3,
		expand: expandInitcwnd,
	},
	"longrtt": {
		title: "A long thin path: buffers, iperf3 -w and parallel streams",
		seed:  "bdp-411ms-path-iperf: 411 ms, 20 Mbit/s uplink, 175 KiB/s by default, ~1 MB/s tuned, -w capped by rmem_max",
		rtt:   411 * time.Millisecond, rate: 20e6, repeat: 3, quick: 1,
		expand: expandLongRTT,
	},
	"emulator": {
		title: "The emulator itself: goodput, CPU and RTT error against the raw veth ceiling",
		seed:  "emulator-targets: every run valid, the cost per Gbit/s, 200 ms x 1 Gbit/s within 25% of a core, idle RTT error <= 0.2 ms",
		rtt:   200 * time.Millisecond, rate: 1e9, repeat: 3, quick: 1,
		expand: expandEmulator,
	},
	"causes": {
		title: "The path's own failures, named by test, analyze and flows: the ground-truth matrix",
		seed:  "path-causes: random loss, a policer, a shallow or bloated queue, reordering, a middlebox, a CPU-bound end, a PMTU black hole, competing traffic, each named with who can act",
		rtt:   50 * time.Millisecond, rate: 100e6, repeat: 10, quick: 1,
		expand: expandCauses,
	},
	"upload": {
		title: "Upload to a server whose application sets a tiny SO_RCVBUF",
		seed:  "small-rcvbuf-upload-capture: 605 KB upload takes 8 s at 35 ms because the server advertises 2,920 bytes",
		rtt:   35 * time.Millisecond, rate: 100e6, repeat: 3, quick: 1,
		expand: expandUpload,
	},
}

// verifyDef is `longhaul verify`: a plan file's settings against a
// baseline, on the plan's path. It is not a lab scenario of its own.
var verifyDef = scenarioDef{
	title: "Prove a plan before applying it: its settings against a baseline on an emulated copy of the path",
	rtt:   200 * time.Millisecond, rate: 1e9, repeat: 3, quick: 1,
	expand: expandVerify,
}

// verifyInput is a plan's namespace settings and the baseline to beat.
type verifyInput struct {
	plan     []sysctl.Setting
	planDesc string
	baseline string
}

// Baselines are what verify compares a plan with.
func Baselines() []string { return []string{"host", "old-ubuntu"} }

// ExpandVerify builds verify's scenario: the baseline ("host" or
// "old-ubuntu") and the plan's namespace sysctls (both ends), bulk
// downloads on the plan's path unless p overrides it.
func ExpandVerify(p Params, f Facts, planSysctls []sysctl.Setting, planDesc, baseline string) (*Scenario, error) {
	if !slices.Contains(Baselines(), baseline) {
		return nil, inputf("baseline %q: want one of %s", baseline, strings.Join(Baselines(), ", "))
	}
	p.verify = &verifyInput{plan: planSysctls, planDesc: planDesc, baseline: baseline}
	return expand("verify", verifyDef, p, f)
}

func expandVerify(s *Scenario, p Params) error {
	dur, err := runLength(s, p, 12*time.Second, 8*time.Second)
	if err != nil {
		return err
	}
	v := p.verify
	base := Case{ID: "baseline", Series: "profile", Kind: KindDownload, Duration: dur}
	switch v.baseline {
	case "host":
		base.Label = "this host's settings"
		base.Client, base.Server = bufSysctls(s.Facts.HostRmem, s.Facts.HostWmem), bufSysctls(s.Facts.HostRmem, s.Facts.HostWmem)
		base.Notes = []string{fmt.Sprintf("tcp_rmem %s, tcp_wmem %s", triple(s.Facts.HostRmem), triple(s.Facts.HostWmem))}
	case "old-ubuntu":
		base.Label = "old Ubuntu defaults"
		base.Client, base.Server = bufSysctls(oldUbuntuRmem, oldUbuntuWmem), bufSysctls(oldUbuntuRmem, oldUbuntuWmem)
		base.Notes = []string{"tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304"}
	}
	// The plan is this host after apply: its values over the host's, so
	// keys it leaves alone keep the host's value whatever the baseline.
	host := bufSysctls(s.Facts.HostRmem, s.Facts.HostWmem)
	planCase := Case{ID: "plan", Series: "profile", Label: "the plan", Kind: KindDownload, Duration: dur, X: 1,
		Client: overlay(host, v.plan), Server: overlay(host, v.plan), Notes: []string{v.planDesc}}
	s.Cases = []Case{base, planCase}
	s.Charts = []results.Chart{{
		ID: "verify", Title: "Bulk download: baseline vs the plan", Kind: "bar",
		XLabel: "settings", YLabel: "throughput (steady state)", YUnit: "bps",
		Metric: "throughput_bps", Model: "throughput_bps", Series: []string{"profile"},
		Note: "curl downloads from nginx over the emulated path; each end in its own namespace with the settings shown. Dots: the path model.",
	}, tcpinfoChart("tcp_info over time (sender)")}
	s.TCPInfoCase = "plan"
	return nil
}

// Names lists the scenarios in the order `lab` documents them.
func Names() []string {
	return []string{"buffers", "initcwnd", "longrtt", "upload", "emulator", "causes"}
}

// Describe returns a scenario's title and the problem users reported
// that it reproduces, for help text: the problem without the internal
// name of its report before it ("buffers-6x-http-downloads: 200 ms, ..."
// reads "200 ms, ...").
func Describe(name string) (title, problem string, ok bool) {
	d, ok := scenarios[name]
	problem = d.seed
	if id, rest, cut := strings.Cut(problem, ": "); cut && !strings.ContainsAny(id, " ,") {
		problem = rest
	}
	return d.title, problem, ok
}

// Expand turns a scenario name and the user's parameters into the list of
// cases to run. It is pure: everything about the host comes in f.
func Expand(name string, p Params, f Facts) (*Scenario, error) {
	d, ok := scenarios[name]
	if !ok {
		return nil, inputf("unknown scenario %q (have: %s)", name, strings.Join(Names(), ", "))
	}
	if p.IPv6 && name != "causes" {
		return nil, inputf("--ipv6 applies to the causes scenario only")
	}
	return expand(name, d, p, f)
}

func expand(name string, d scenarioDef, p Params, f Facts) (*Scenario, error) {
	s := &Scenario{Name: name, Title: d.title, Seed: d.seed, RTT: d.rtt, RateBps: d.rate,
		Loss: p.Loss, Quick: p.Quick, CC: p.CC, Facts: f, Repeat: d.repeat}
	if p.RTT != 0 {
		s.RTT = p.RTT
	}
	if p.RateBps != 0 {
		s.RateBps = p.RateBps
	}
	if p.Quick {
		s.Repeat = d.quick
	}
	if p.Repeat != 0 {
		s.Repeat = p.Repeat
	}
	if s.CC == "" {
		s.CC = "cubic"
	}
	switch {
	case s.RTT < time.Millisecond || s.RTT > 5*time.Second:
		return nil, inputf("rtt %v out of range: the lab runs 1ms..5s", s.RTT)
	case s.RateBps < 1e5 || s.RateBps > 10e9:
		return nil, inputf("rate %s out of range: the lab runs 100 kbit/s..10 Gbit/s", units.FormatRate(s.RateBps))
	case s.Loss < 0 || s.Loss >= 0.5:
		return nil, inputf("loss %g%% out of range: 0 to under 50%%", s.Loss*100)
	case s.Repeat < 1 || s.Repeat > 100:
		return nil, inputf("repeat %d out of range 1..100", s.Repeat)
	case p.Duration < 0 || p.Duration > time.Hour:
		return nil, inputf("run length %v out of range: up to 1h", p.Duration)
	case p.Queue < 0:
		return nil, inputf("queue must not be negative")
	case p.Queue > 0 && p.Queue < 1538:
		return nil, inputf("queue of %d bytes is smaller than one packet (1538 bytes on the wire)", p.Queue)
	}
	s.Queue = p.Queue
	if s.Queue == 0 {
		s.Queue = linkemu.BDPQueue(1, s.RateBps, s.RTT)
	}
	if err := d.expand(s, p); err != nil {
		return nil, err
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		c.Client = overlay(p.ClientSysctls, c.Client)
		c.Server = overlay(p.ServerSysctls, c.Server)
	}
	for i := range s.Charts {
		if s.Charts[i].Kind == "tcpinfo" {
			s.Charts[i].Case, s.Charts[i].End = s.TCPInfoCase, s.senderEnd()
		}
	}
	seen := map[string]bool{}
	for _, c := range s.Cases {
		if seen[c.ID] {
			return nil, fmt.Errorf("scenario %s: duplicate case %q", name, c.ID)
		}
		seen[c.ID] = true
	}
	return s, nil
}

// senderEnd is the end that sends the data in the scenario's runs.
func (s *Scenario) senderEnd() string {
	if len(s.Cases) > 0 && s.Cases[0].Kind == KindUpload {
		return "client"
	}
	return "server"
}

// Runs is the number of runs the scenario makes.
func (s *Scenario) Runs() int { return len(s.Cases) * s.Repeat }

// Estimate is how long the runs should take, for the progress line.
func (s *Scenario) Estimate() time.Duration {
	var d time.Duration
	for _, c := range s.Cases {
		d += c.estimate(s.RTT)
	}
	return d * time.Duration(s.Repeat)
}

// setupCost is what a run costs besides its measurement: the path, the
// peers and their shutdown.
const setupCost = 400 * time.Millisecond

func (c Case) estimate(rtt time.Duration) time.Duration {
	switch c.Kind {
	case KindDownload, KindIperf:
		return c.Duration + c.Omit + setupCost
	case KindCauses:
		return CausesEstimate(c)
	case KindPing:
		return setupCost + time.Duration(c.Ping)*100*time.Millisecond + c.Path.RTT
	case KindUpload:
		if c.RcvBuf > 0 {
			// About one window of RcvBuf bytes per round trip.
			return setupCost + time.Duration(float64(c.Bytes)/float64(c.RcvBuf)*float64(rtt))
		}
		return setupCost + 10*rtt
	default:
		return setupCost + 10*rtt
	}
}

// Filter keeps the cases whose ID or label matches one of the glob
// patterns (path.Match syntax, e.g. "both-*", "plan" or "old ubuntu
// defaults"), ignoring case: tables print a case's label, so a user
// copies that as often as the id. No patterns keeps all.
func Filter(s *Scenario, patterns []string) error {
	if len(patterns) == 0 {
		return nil
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return inputf("case pattern %q: %v", p, err)
		}
	}
	kept := s.Cases[:0:0]
	for _, c := range s.Cases {
		if slices.ContainsFunc(patterns, c.matches) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		valid := make([]string, len(s.Cases))
		for i, c := range s.Cases {
			valid[i] = c.ID
			if c.Label != "" && !strings.EqualFold(c.Label, c.ID) {
				valid[i] += " (" + c.Label + ")"
			}
		}
		return inputf("case pattern %s matches none of scenario %s's cases; give an id or the name a table prints, one of: %s", strings.Join(patterns, ","), s.Name, strings.Join(valid, ", "))
	}
	s.Cases = kept
	return nil
}

// matches reports whether the glob p names c by its id or its label.
func (c Case) matches(p string) bool {
	p = strings.ToLower(p)
	for _, name := range []string{c.ID, c.Label} {
		name = strings.ToLower(name)
		if ok, _ := path.Match(p, name); ok || p == name {
			return true
		}
	}
	return false
}

// overlay returns base with over applied: a key in both takes over's
// value in base's place; over's other keys follow in order.
func overlay(base, over []sysctl.Setting) []sysctl.Setting {
	out := slices.Clone(base)
	for _, o := range over {
		i := slices.IndexFunc(out, func(b sysctl.Setting) bool { return b.Key == o.Key })
		if i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

// Header describes the scenario at the top of its results file.
func (s *Scenario) Header(started time.Time) results.Header {
	return results.Header{
		Scenario: s.Name, Title: s.Title, Seed: s.Seed, Started: started.UTC(), Quick: s.Quick, Repeat: s.Repeat,
		Path: results.Path{RTTSeconds: s.RTT.Seconds(), RateBps: s.RateBps, Loss: s.Loss, QueueBytes: s.Queue,
			BDPBytes: int64(pathmodel.BDP(s.GoodputBps(), s.RTT)), GoodputBps: s.GoodputBps()},
		Host: s.Facts.Host, CC: s.CC, Charts: s.Charts, Columns: s.Columns,
	}
}
