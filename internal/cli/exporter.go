//go:build linux

package cli

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/exporter"
	"github.com/longhaul/longhaul/internal/probe"
	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

type exporterArgs struct {
	listen, netns    string
	interval         units.Duration
	ports            portsFlag
	token, cert, key string
	groups           []string
	paths            []string
	maxSeries        int
	perFlow          bool
	perSource        int
	probe            probeArgs
}

// probeArgs are the exporter's --probe-* flags: what /probe may do.
type probeArgs struct {
	allow                        []string
	ports                        probePorts
	targets, auth                string
	phase, timeout, minInterval  units.Duration
	concurrency, streams, rounds int
	maxRate                      units.Rate
	maxBytes                     units.Size
}

const exporterLong = `exporter serves Prometheus metrics at http://LISTEN/metrics: for each peer
group, the seconds TCP sockets were busy sending and the seconds they were
limited by the peer's receive window (rwnd), their own send buffer
(sndbuf), the congestion window (cwnd) or the application (app), bytes
sent and received, retransmitted segments, the smallest RTT; sending flows
by the verdict of longhaul flows; this host's largest windows and audit
findings; and the exporter's own cost and dropped series.

It reads tcp_info of every socket (sock_diag) each --interval, and the
final tcp_info of each socket the kernel frees (sock_diag destroy
notifications, which need CAP_NET_ADMIN), so counters keep growing when
sockets close and short flows are not missed.

Peers are grouped: the named --peer-group CIDRs first (longest prefix
wins), then the /24 (IPv4) or /48 (IPv6) of the busiest peers while they
fit under --max-series, and "other". Every longhaul_ series counts
against --max-series; series over it are dropped and counted in
longhaul_exporter_series_dropped_total.

The server is read-only, with timeouts, 4 connections per address (64
with probes), at most 64 in all (256 with probes) and 4 scrapes at once. It listens on all addresses by default (:9979): where
the port is reachable from elsewhere, give --listen a management address
and require a token (--auth-token-file), over TLS (--tls-cert-file,
--tls-key-file).

With --probe-allow PREFIX or --probe-targets FILE it also answers
/probe?target=HOST[:PORT] (Prometheus's multi-target pattern): a short
longhaul test against that host's longhaul serve (--probe-auth is its
token), answered as longhaul_probe_* metrics: each direction's rate, the
path's rate, RTT idle and loaded, retransmissions, and what limits each
direction (the host, the setting, the path's cause). The query chooses
only the target, among the allowed ones: an address of a --probe-allow
prefix at a --probe-ports port, or a line of the targets file (the only
way to probe by name: the exporter never looks up a query's name). The
flags cap everything else. A target is one target however the query
spells it (its address as dialled). A target must send its serve's hello
within seconds: a probe takes a --probe-concurrency slot only once the
target has proved it holds the token, so targets that stall do not hold
the slots. deploy/prometheus/longhaul-probes.yml schedules them.`

func newExporterCmd() *cobra.Command {
	var a exporterArgs
	c := &cobra.Command{
		Use:   "exporter [flags]",
		Short: "Prometheus exporter: what limits this host's TCP flows, per peer group",
		Long:  exporterLong,
		Example: `  # all flows, grouped by the busiest /24s
  sudo longhaul exporter

  # name the networks you care about; only the web and iperf3 ports
  sudo longhaul exporter --peer-group eu=203.0.113.0/24 --peer-group us=2001:db8::/32 --ports 443,5201

  # per-socket series too, at most 5000 series
  sudo longhaul exporter --per-flow --max-series 5000 --listen 127.0.0.1:9979

  # scrapers must send the token, over HTTPS
  sudo longhaul exporter --auth-token-file /etc/longhaul/token --tls-cert-file cert.pem --tls-key-file key.pem

  # also test the paths to the hosts running longhaul serve in 198.51.100.0/24
  sudo longhaul exporter --probe-allow 198.51.100.0/24 --probe-auth /etc/longhaul/serve.token`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opt, err := a.parse()
			if err != nil {
				return err
			}
			opt.Log = slog.New(slog.NewTextHandler(c.ErrOrStderr(), nil))
			return stopped(c.Context(), exporter.Run(c.Context(), opt))
		},
	}
	f := c.Flags()
	f.StringVar(&a.listen, "listen", ":9979", "address and port of the metrics server")
	a.interval = units.Duration{D: time.Second, Min: 100 * time.Millisecond, Max: time.Minute}
	f.Var(&a.interval, "interval", "time between two reads of the sockets (100ms..1m)")
	f.StringArrayVar(&a.groups, "peer-group", nil, "NAME=CIDR: peers in CIDR get the peer label NAME (repeatable)")
	f.StringArrayVar(&a.paths, "peer-path", nil, "NAME=RTT/RATE: the path to --peer-group NAME, e.g. sin=170ms/1Gbit/s: the audit also judges this host's buffers against its bandwidth-delay product (longhaul_audit_finding{peer=NAME}) (repeatable)")
	f.Var(&a.ports, "ports", "only sockets with one of these ports at either end, e.g. 443,5201")
	f.IntVar(&a.maxSeries, "max-series", 2000, "most longhaul_ series one scrape returns")
	f.BoolVar(&a.perFlow, "per-flow", false, "also export per-socket series (local and remote address labels)")
	f.StringVar(&a.netns, "netns", "", "read the sockets of this network namespace (a name from ip netns list)")
	f.StringVar(&a.token, "auth-token-file", "", "require Authorization: Bearer TOKEN, the token read from this file (Prometheus: authorization.credentials_file)")
	f.StringVar(&a.cert, "tls-cert-file", "", "serve HTTPS with this PEM certificate (with --tls-key-file)")
	f.StringVar(&a.key, "tls-key-file", "", "the PEM private key of --tls-cert-file")
	f.IntVar(&a.perSource, "per-source-connections", 0, fmt.Sprintf("most connections one address may hold (default 4, %d with probes: Prometheus scrapes each probe target over its own connection)", exporter.ProbeSourceConns))
	a.probe.register(f)
	return c
}

// register adds the --probe-* flags to f.
func (p *probeArgs) register(f *pflag.FlagSet) {
	f.StringArrayVar(&p.allow, "probe-allow", nil, fmt.Sprintf("serve /probe?target=ADDRESS[:PORT] for IP addresses in this prefix, e.g. 198.51.100.0/24, /%d or longer (IPv4), /%d or longer (IPv6); names are not looked up, list them in --probe-targets (repeatable; none by default)", probe.MinPrefixBits4, probe.MinPrefixBits6))
	p.ports = probePorts{ports: []uint16{wire.DefaultPort}}
	f.Var(&p.ports, "probe-ports", fmt.Sprintf("the ports of the serves in --probe-allow's prefixes, e.g. 9978,7000-7003 (at most %d; others are refused without a dial)", probe.MaxPorts))
	f.StringVar(&p.targets, "probe-targets", "", "serve /probe for the targets in this file, as written (any port; the only names probed): one HOST[:PORT] per line, then sha256:PIN for a serve with TLS (the pin serve prints)")
	f.StringVar(&p.auth, "probe-auth", "", "file holding the token of the targets' longhaul serve")
	p.phase = units.Duration{Max: time.Minute}
	f.Var(&p.phase, "probe-phase", fmt.Sprintf("fixed length of each phase of a probe, %s..1m (default: --probe-rounds round trips of the path, fitted into the scrape's timeout)", twohost.MinPhase))
	f.IntVar(&p.rounds, "probe-rounds", probe.DefaultRounds, fmt.Sprintf("length of each phase in round trips of the path (at least %s; shortened to fit the scrape's timeout, and the result says so)", twohost.MinPhase))
	p.timeout = units.Duration{D: probe.DefaultTimeout, Min: time.Second, Max: probe.MaxTimeout}
	f.Var(&p.timeout, "probe-timeout", "most one probe may take (a scrape's timeout shortens it)")
	p.minInterval = units.Duration{D: probe.DefaultMinInterval, Max: 24 * time.Hour}
	f.Var(&p.minInterval, "probe-min-interval", "a target's last result is served again while younger than this, instead of a new test")
	f.IntVar(&p.streams, "probe-streams", probe.DefaultStreams, "streams of a probe's third phase, a download that measures the path's capacity (0 or 1: none)")
	f.IntVar(&p.concurrency, "probe-concurrency", probe.DefaultConcurrent, "most probe tests running at once (one per target; a probe takes one once its target has proved it is a longhaul serve)")
	p.maxRate = units.Rate{Min: 1e5, Max: 1e12}
	f.Var(&p.maxRate, "probe-max-rate", "most bits/s a probe asks the target to send or receive (default: the target's cap)")
	p.maxBytes = units.Size{Min: 1 << 20}
	f.Var(&p.maxBytes, "probe-max-bytes", "most bytes one phase of a probe may move: the target is asked to pace below it")
}

// config checks the --probe-* flags: nil when probes are off.
func (p probeArgs) config(netns string) (*probe.Prober, error) {
	if len(p.allow) == 0 && p.targets == "" {
		if p.auth != "" {
			return nil, usagef("--probe-auth without --probe-allow or --probe-targets: name the targets /probe may test")
		}
		return nil, nil
	}
	if p.rounds < 1 || p.rounds > probe.MaxRounds {
		return nil, usagef("--probe-rounds must be 1..%d, got %d", probe.MaxRounds, p.rounds)
	}
	cfg := probe.Config{Allowed: probe.Allowed{Ports: p.ports.ports}, Phase: p.phase.D, Rounds: p.rounds, Timeout: p.timeout.D, MinInterval: p.minInterval.D, Concurrent: p.concurrency, Streams: p.streams,
		MaxRateBps: p.maxRate.Bps, MaxBytes: p.maxBytes.N, Netns: netns}
	for _, s := range p.allow {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, usagef("--probe-allow %q: write a prefix like 198.51.100.0/24 or 2001:db8::/32", s)
		}
		cfg.Allowed.Prefixes = append(cfg.Allowed.Prefixes, pfx.Masked())
	}
	if p.targets != "" {
		f, err := openRegular("--probe-targets", p.targets, "a file of HOST[:PORT] lines")
		if err != nil {
			return nil, err
		}
		cfg.Allowed.Targets, err = probe.ReadTargets(f)
		f.Close()
		if err != nil {
			return nil, badinput.Wrap(fmt.Errorf("--probe-targets %s: %w", p.targets, err))
		}
	}
	if p.auth == "" {
		return nil, usagef("probes need --probe-auth TOKEN-FILE: the token of the targets' longhaul serve")
	}
	var err error
	if cfg.Token, err = secret.ReadToken(p.auth); err != nil {
		return nil, err // package secret marks what is the user's to fix
	}
	if err := cfg.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return probe.New(cfg), nil
}

// probePorts is --probe-ports: ports and ranges A-B; the first Set
// replaces the default (serve's port).
type probePorts struct {
	ports []uint16
	set   bool
}

func (f *probePorts) Set(s string) error {
	if !f.set {
		f.ports, f.set = nil, true
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		if !isRange {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if errA != nil || errB != nil || a < 1 || b > 65535 || a > b {
			return fmt.Errorf("%q is not a port or a range of ports (1..65535, e.g. 9978 or 7000-7003)", part)
		}
		if len(f.ports)+b-a+1 > probe.MaxPorts {
			return fmt.Errorf("more than %d ports: name the ports your serves listen on", probe.MaxPorts)
		}
		for n := a; n <= b; n++ {
			if !slices.Contains(f.ports, uint16(n)) {
				f.ports = append(f.ports, uint16(n))
			}
		}
	}
	return nil
}

func (f *probePorts) String() string {
	s := make([]string, len(f.ports))
	for i, p := range f.ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

func (f *probePorts) Type() string { return "ports" }

var groupName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

func (a exporterArgs) parse() (exporter.Options, error) {
	o := exporter.Options{Listen: a.listen, Netns: a.netns, Version: version,
		Web: exporter.Web{TokenFile: a.token, CertFile: a.cert, KeyFile: a.key}}
	if (a.cert == "") != (a.key == "") {
		return o, usagef("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	var err error
	o.Interval, o.Ports = a.interval.D, a.ports.ports
	if _, _, err := net.SplitHostPort(a.listen); err != nil {
		return o, usagef("--listen: %q: %v: write HOST:PORT or :PORT, e.g. :9979", a.listen, err)
	}
	if o.Groups, err = parseGroups(a.groups); err != nil {
		return o, err
	}
	if o.Paths, err = parsePaths(a.paths, o.Groups); err != nil {
		return o, err
	}
	need := len(o.Groups) + 1 // the named groups and "other"
	if a.maxSeries > 10_000_000 || exporter.MaxGroups(a.maxSeries) < need {
		return o, usagef("--max-series: %d does not fit %d peer groups (%d series each, 100 for the host): give %d..10000000",
			a.maxSeries, need, exporter.SeriesPerGroup, exporter.MinSeries(need))
	}
	o.MaxSeries, o.PerFlow = a.maxSeries, a.perFlow
	if a.perSource < 0 || a.perSource > 4096 {
		return o, usagef("--per-source-connections must be 1..4096, got %d", a.perSource)
	}
	o.PerSource = a.perSource
	o.Probe, err = a.probe.config(a.netns)
	return o, err
}

func parseGroups(specs []string) ([]exporter.Group, error) {
	var gs []exporter.Group
	seen := map[string]bool{}
	for _, s := range specs {
		name, cidr, ok := strings.Cut(s, "=")
		if !ok || !groupName.MatchString(name) || name == exporter.Other {
			return nil, usagef("--peer-group: %q: write NAME=CIDR with NAME of letters, digits, _ . : - (not %q), e.g. eu=203.0.113.0/24", s, exporter.Other)
		}
		if seen[name] {
			return nil, usagef("--peer-group: %q given twice: merge the networks or rename one", name)
		}
		seen[name] = true
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			addr, aerr := netip.ParseAddr(cidr)
			if aerr != nil {
				return nil, usagef("--peer-group: %q is neither an address nor a prefix: write 203.0.113.0/24 or 2001:db8::/32", cidr)
			}
			p = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		gs = append(gs, exporter.Group{Name: name, Prefix: p.Masked()})
	}
	return gs, nil
}

// parsePaths reads --peer-path NAME=RTT/RATE, NAME a --peer-group's.
func parsePaths(specs []string, groups []exporter.Group) ([]exporter.PeerPath, error) {
	var ps []exporter.PeerPath
	for _, s := range specs {
		name, path, _ := strings.Cut(s, "=")
		rtt, rate, ok := strings.Cut(path, "/")
		if !ok || name == "" {
			return nil, usagef("--peer-path: %q: write NAME=RTT/RATE, e.g. sin=170ms/1Gbit/s", s)
		}
		if !slices.ContainsFunc(groups, func(g exporter.Group) bool { return g.Name == name }) {
			return nil, usagef("--peer-path: %q is not a --peer-group: name the group's network first (--peer-group %s=CIDR)", name, name)
		}
		if slices.ContainsFunc(ps, func(p exporter.PeerPath) bool { return p.Group == name }) {
			return nil, usagef("--peer-path: %q given twice", name)
		}
		d, err := units.ParseDuration(rtt)
		if err != nil || d <= 0 || d > 10*time.Second {
			return nil, usagef("--peer-path: %q: the RTT must be a duration over 0 and at most 10s, e.g. 170ms", s)
		}
		r, err := units.ParseRate(rate)
		if err != nil || r < 1e5 || r > 1e12 {
			return nil, usagef("--peer-path: %q: the rate must be 100kbit/s..1Tbit/s, e.g. 1Gbit/s", s)
		}
		ps = append(ps, exporter.PeerPath{Group: name, RTT: d, RateBps: r})
	}
	return ps, nil
}
