package topo

import (
	"fmt"
	"github.com/longhaul/longhaul/internal/sysctl"
	"math"
	"net/netip"
	"strings"
)

// Defaults applied by [Spec.WithDefaults] to zero fields.
const (
	DefaultPrefix = "lh"
	// DefaultMTU is Ethernet's, so that segment sizes match the paths
	// being emulated.
	DefaultMTU = 1500
	// DefaultTxQueueLen is far above the kernel's 500 for TUN: a reader
	// (the data plane) that lags for a moment must not lose packets
	// silently in the device queue (emulator notes, lesson 8).
	DefaultTxQueueLen = 10000
)

// Default addresses: the first two of the benchmarking range 198.18.0.0/15
// (RFC 2544, RFC 6890), which never appears on real networks.
var (
	DefaultClientAddr = netip.MustParseAddr("198.18.0.1")
	DefaultServerAddr = netip.MustParseAddr("198.18.0.2")
	// With IPv6, the first two of its benchmarking prefix 2001:2::/48
	// (RFC 5180).
	DefaultClientAddr6 = netip.MustParseAddr("2001:2::1")
	DefaultServerAddr6 = netip.MustParseAddr("2001:2::2")
)

// benchRange and benchRange6 are the only ranges end addresses may come
// from.
var (
	benchRange  = netip.MustParsePrefix("198.18.0.0/15")
	benchRange6 = netip.MustParsePrefix("2001:2::/48")
)

// DevName is the name of the TUN device in each namespace. Each end has
// its own namespace, so the same name never collides.
const DevName = "lh0"

// Limits on Spec fields.
const (
	maxPrefixLen = 32 // "<prefix>-<10 hex>-c" stays far below netns's 64 bytes
	minMTU       = 68 // IPv4's minimum (RFC 791); the kernel refuses less
	maxMTU       = 65535
	maxTxQLen    = 1 << 24
)

// Spec describes a topology as a plain value: nothing here owns a kernel
// resource. [Up] turns a Spec into a running [Topology]. Zero fields take
// the defaults documented on each field (see [Spec.WithDefaults]).
type Spec struct {
	// Prefix starts every resource name: a run's namespaces are
	// "<prefix>-<runid>-c" and "<prefix>-<runid>-s" and its state file is
	// /run/longhaul/<prefix>-<runid>.json. Letters and digits only,
	// starting with a letter, at most 32 bytes. Default "lh".
	Prefix string

	// ClientAddr and ServerAddr are the IPv4 addresses of the two ends,
	// both inside 198.18.0.0/15 and different. Defaults 198.18.0.1 and
	// 198.18.0.2.
	ClientAddr, ServerAddr netip.Addr

	// IPv6 gives the ends IPv6 addresses too (ClientAddr6, ServerAddr6,
	// inside 2001:2::/48; defaults 2001:2::1 and 2001:2::2), without
	// duplicate address detection, router solicitations or a link-local
	// address. Without it IPv6 is disabled on the link.
	IPv6                     bool
	ClientAddr6, ServerAddr6 netip.Addr

	// MTU of both TUN devices, 68..65535. Default 1500.
	MTU int

	// TxQueueLen of both TUN devices (packets). Default 10000.
	TxQueueLen int

	// ClientSysctls and ServerSysctls are set inside the client's and
	// the server's namespace, in order, after the defaults
	// (net.ipv4.tcp_no_metrics_save=1, net.ipv6.conf.lh0.disable_ipv6=1)
	// and CC, which they may override. Only net.* keys are allowed: other
	// trees are global and writing them would change the host. Each value
	// is read back; [Up] fails if the kernel refuses it or stores
	// something else.
	ClientSysctls, ServerSysctls []Sysctl

	// CC, if set, becomes net.ipv4.tcp_congestion_control in both
	// namespaces. On Linux (checked on 6.18) a non-initial namespace can
	// only default to an algorithm listed in the HOST's
	// net.ipv4.tcp_allowed_congestion_control, even for root: anything
	// else fails with EPERM although the algorithm is loaded. [Up]
	// reports that with the allowed list rather than widening it.
	CC string

	// ClientCPU and ServerCPU limit the CPU time of the commands started
	// in each namespace (End.Command), in cores (0.5 is half of one; 0 is
	// no limit), with a cgroup of the namespace's name: cgroup v2's
	// cpu.max, or v1's CFS quota where the cpu controller is there.
	ClientCPU, ServerCPU float64

	// JoinClient, if set, is an existing namespace (another topology's
	// client) that takes this topology's client end: several paths from
	// one client, each to its own server and with its own emulation (a
	// star). This topology creates only the server's namespace; Close
	// removes its client device (it closes the TUN) and kills the
	// commands started through its client End, never the namespace nor
	// anything else in it. ClientSysctls apply to the whole shared
	// namespace. Not with Veth or ClientCPU.
	JoinClient string

	// Dev names the TUN device at both ends (default "lh0"); the paths
	// of a star need one each in the shared client: up to 15 letters and
	// digits.
	Dev string

	// Veth joins the two namespaces with a veth pair instead of two TUN
	// devices: the kernel's own path with no data plane in between (the
	// emulator benchmark's ceiling). Each end's Dev is its half of the
	// pair, Tun is nil, and TxQueueLen does not apply.
	Veth bool
}

// Sysctl is one kernel parameter assignment (sysctl.Setting): a spec
// value that pure packages build without importing topo.
type Sysctl = sysctl.Setting

// ParseSysctl parses "key=value" as written on a command line or in
// sysctl.conf. Space around key and value is trimmed; a slashed key
// (net/ipv4/tcp_rmem) is converted to the dotted form. The key may only
// contain letters, digits and _ . / -; the value must be one non-empty
// line.
func ParseSysctl(s string) (Sysctl, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return Sysctl{}, fmt.Errorf("topo: sysctl %q: missing '=' (want key=value)", s)
	}
	sc := Sysctl{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}
	key, err := checkSysctl(sc)
	if err != nil {
		return Sysctl{}, fmt.Errorf("topo: sysctl %q: %w", s, err)
	}
	sc.Key = key
	return sc, nil
}

// checkSysctl validates a key and value and returns the dotted key.
func checkSysctl(sc Sysctl) (string, error) {
	if sc.Key == "" {
		return "", fmt.Errorf("empty key")
	}
	for _, r := range sc.Key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '_' || r == '.' || r == '/' || r == '-') {
			return "", fmt.Errorf("key: character %q is not allowed (letters, digits, _ . / -)", r)
		}
	}
	key := strings.ReplaceAll(sc.Key, "/", ".")
	for _, part := range strings.Split(key, ".") {
		if part == "" {
			return "", fmt.Errorf("key %q has an empty component", sc.Key)
		}
	}
	if !strings.HasPrefix(key, "net.") {
		return "", fmt.Errorf("key %q is not under net.: only network sysctls are per namespace", sc.Key)
	}
	if strings.TrimSpace(sc.Value) == "" {
		return "", fmt.Errorf("empty value")
	}
	if strings.ContainsAny(sc.Value, "\n\r\x00") {
		return "", fmt.Errorf("value must be a single line")
	}
	return key, nil
}

// WithDefaults returns s with every zero field replaced by its default.
func (s Spec) WithDefaults() Spec {
	if s.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	if !s.ClientAddr.IsValid() {
		s.ClientAddr = DefaultClientAddr
	}
	if !s.ServerAddr.IsValid() {
		s.ServerAddr = DefaultServerAddr
	}
	if s.IPv6 && !s.ClientAddr6.IsValid() {
		s.ClientAddr6 = DefaultClientAddr6
	}
	if s.IPv6 && !s.ServerAddr6.IsValid() {
		s.ServerAddr6 = DefaultServerAddr6
	}
	if s.MTU == 0 {
		s.MTU = DefaultMTU
	}
	if s.TxQueueLen == 0 {
		s.TxQueueLen = DefaultTxQueueLen
	}
	if s.Dev == "" {
		s.Dev = DevName
	}
	return s
}

// Validate checks s as [Up] would use it (zero fields mean defaults). It
// does not look at the kernel: whether a sysctl key exists or accepts a
// value is only known inside the namespace, so [Up] reports that.
func (s Spec) Validate() error {
	if err := s.WithDefaults().validate(); err != nil {
		return fmt.Errorf("topo: spec: %w", err)
	}
	return nil
}

func (s Spec) validate() error {
	if err := checkPrefix(s.Prefix); err != nil {
		return err
	}
	if err := checkAddr("client", s.ClientAddr); err != nil {
		return err
	}
	if err := checkAddr("server", s.ServerAddr); err != nil {
		return err
	}
	if s.ClientAddr.Unmap() == s.ServerAddr.Unmap() {
		return fmt.Errorf("client and server address are both %v", s.ClientAddr.Unmap())
	}
	if s.IPv6 {
		for side, a := range map[string]netip.Addr{"client": s.ClientAddr6, "server": s.ServerAddr6} {
			if !a.Is6() || a.Is4In6() || !benchRange6.Contains(a) {
				return fmt.Errorf("%s IPv6 address %v is outside %v (the IPv6 benchmarking prefix, RFC 5180)", side, a, benchRange6)
			}
		}
		if s.ClientAddr6 == s.ServerAddr6 {
			return fmt.Errorf("client and server IPv6 address are both %v", s.ClientAddr6)
		}
		if s.MTU < 1280 {
			return fmt.Errorf("mtu %d is below IPv6's minimum of 1280", s.MTU)
		}
	}
	for side, c := range map[string]float64{"client": s.ClientCPU, "server": s.ServerCPU} {
		if math.IsNaN(c) || c < 0 || (c > 0 && c < 0.01) || c > 1024 {
			return fmt.Errorf("%s cpu limit %g is out of range: give 0.01 to 1024 cores (0 for none)", side, c)
		}
	}
	if s.MTU < minMTU || s.MTU > maxMTU {
		return fmt.Errorf("mtu %d out of range %d..%d", s.MTU, minMTU, maxMTU)
	}
	if s.TxQueueLen < 1 || s.TxQueueLen > maxTxQLen {
		return fmt.Errorf("txqueuelen %d out of range 1..%d", s.TxQueueLen, maxTxQLen)
	}
	if len(s.Dev) > 15 || strings.Trim(s.Dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		return fmt.Errorf("device name %q: up to 15 letters and digits", s.Dev)
	}
	if s.JoinClient != "" && (s.Veth || s.ClientCPU > 0) {
		return fmt.Errorf("a client joined from namespace %s takes no veth pair and no CPU limit of its own", s.JoinClient)
	}
	if s.CC != "" {
		for _, r := range s.CC {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				return fmt.Errorf("congestion control %q: character %q is not allowed", s.CC, r)
			}
		}
	}
	if err := checkSysctlList("client", s.ClientSysctls, s.CC); err != nil {
		return err
	}
	return checkSysctlList("server", s.ServerSysctls, s.CC)
}

func checkPrefix(p string) error {
	if len(p) > maxPrefixLen {
		return fmt.Errorf("prefix %q longer than %d bytes", p, maxPrefixLen)
	}
	for i, r := range p {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if i == 0 && !letter {
			return fmt.Errorf("prefix %q must start with a letter", p)
		}
		if !letter && !(r >= '0' && r <= '9') {
			// '-' in particular: it separates prefix, run id and side,
			// and reaping "lh" must never match a run of "lh-x".
			return fmt.Errorf("prefix %q: character %q is not allowed (letters and digits only)", p, r)
		}
	}
	return nil
}

func checkAddr(side string, a netip.Addr) error {
	a = a.Unmap()
	if !a.Is4() {
		return fmt.Errorf("%s address %v is not IPv4", side, a)
	}
	if !benchRange.Contains(a) {
		return fmt.Errorf("%s address %v is outside %v (the benchmarking range, RFC 2544)", side, a, benchRange)
	}
	return nil
}

func checkSysctlList(side string, list []Sysctl, cc string) error {
	seen := map[string]bool{}
	for _, sc := range list {
		key, err := checkSysctl(sc)
		if err != nil {
			return fmt.Errorf("%s sysctl %s: %w", side, sc, err)
		}
		if seen[key] {
			return fmt.Errorf("%s sysctl %s: key set twice", side, key)
		}
		seen[key] = true
		if cc != "" && key == keyCC {
			return fmt.Errorf("%s sysctl %s: conflicts with CC %q", side, key, cc)
		}
	}
	return nil
}

// Keys topo sets itself.
const (
	keyCC            = "net.ipv4.tcp_congestion_control"
	keyNoMetricsSave = "net.ipv4.tcp_no_metrics_save"
)

// plan returns the sysctls to apply in one namespace, in order, with
// dotted keys: the defaults (for device dev), then CC, then the user's
// list; a later entry for the same key replaces the earlier one in place.
func plan(user []Sysctl, cc string, ipv6 bool, dev string) []Sysctl {
	out := []Sysctl{
		// Cached per-destination metrics (ssthresh, RTT) would carry over
		// from one experiment to the next (kernel facts).
		{Key: keyNoMetricsSave, Value: "1"},
		// No router solicitations, DAD or MLD on the emulated link: it
		// carries only the experiment's IPv4 traffic.
		{Key: "net.ipv6.conf." + dev + ".disable_ipv6", Value: "1"},
	}
	if ipv6 {
		// IPv6 on, but quiet: no link-local address (addr_gen_mode 1), no
		// duplicate address detection, no router solicitations or
		// advertisements; the addresses are added without DAD.
		conf := "net.ipv6.conf." + dev + "."
		out[1].Value = "0"
		out = append(out, Sysctl{Key: conf + "addr_gen_mode", Value: "1"}, Sysctl{Key: conf + "accept_dad", Value: "0"},
			Sysctl{Key: conf + "accept_ra", Value: "0"}, Sysctl{Key: conf + "router_solicitations", Value: "0"})
	}
	if cc != "" {
		out = append(out, Sysctl{Key: keyCC, Value: cc})
	}
	for _, sc := range user {
		key, _ := checkSysctl(sc) // validated before
		sc = Sysctl{Key: key, Value: strings.TrimSpace(sc.Value)}
		replaced := false
		for i := range out {
			if out[i].Key == key {
				out[i], replaced = sc, true
			}
		}
		if !replaced {
			out = append(out, sc)
		}
	}
	return out
}
