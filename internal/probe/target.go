package probe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Allowed is the set of targets a probe may be pointed at: addresses in
// a prefix at a serve port, and targets named in a file. Nothing is
// allowed by default: a query must not be able to point the exporter at
// an arbitrary host, nor at any port of an allowed one.
type Allowed struct {
	Prefixes []netip.Prefix
	// Ports are the ports of the prefixes' serves (--probe-ports; none:
	// serve's default port). A probe of any other port would make /probe
	// an open-port scanner of the prefixes (closed, silent and speaking
	// ports answer differently), so it is refused before any dial.
	Ports []uint16
	// Targets are those of the targets file (a name there is trusted as
	// the operator wrote it, whatever it resolves to, and so is its
	// port). Names are probed only through it: the exporter never looks
	// up a name a query gives, so a scraper cannot make it query DNS.
	Targets []Target
}

// Target is a line of the targets file: HOST:PORT, and the pin of its
// serve's TLS key when it serves TLS (serve --tls-cert prints it).
type Target struct {
	Addr string
	Pin  string // "sha256:..." or "" (plain TCP)
}

// Empty reports whether nothing is allowed.
func (a Allowed) Empty() bool { return len(a.Prefixes) == 0 && len(a.Targets) == 0 }

func (a Allowed) inPrefix(ip netip.Addr) bool {
	for _, p := range a.Prefixes {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// ports are the serve ports of the prefixes.
func (a Allowed) ports() []uint16 {
	if len(a.Ports) == 0 {
		return []uint16{wire.DefaultPort}
	}
	return a.Ports
}

// Widest prefixes --probe-allow takes: anything wider is most of an
// address family (0.0.0.0/0, ::/0, 0.0.0.0/1, ...), which no fleet of
// serves needs and which makes /probe a prober of the whole internet.
const (
	MinPrefixBits4 = 8
	MinPrefixBits6 = 32
)

// checkPrefix refuses a --probe-allow prefix that covers most of a
// family, or is written in IPv4-mapped form (which no IPv4 address
// would match: addresses are compared unmapped).
func checkPrefix(p netip.Prefix) error {
	bits, least := p.Bits(), MinPrefixBits6
	mapped := p.Addr().Is4In6() && bits >= 96
	if p.Addr().Is4() || mapped {
		bits, least = bits-96*b2i(mapped), MinPrefixBits4
	}
	switch {
	case !p.IsValid():
		return errors.New("--probe-allow: an invalid prefix: write one like 198.51.100.0/24 or 2001:db8::/32")
	case bits < least:
		return fmt.Errorf("--probe-allow %s is too wide: give your serves' networks, /%d or longer for IPv4 and /%d or longer for IPv6, or list the hosts in --probe-targets",
			p, MinPrefixBits4, MinPrefixBits6)
	case mapped:
		return fmt.Errorf("--probe-allow %s is IPv4-mapped: write the IPv4 prefix %s", p, netip.PrefixFrom(p.Addr().Unmap(), bits).Masked())
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ErrNotAllowed marks a target outside the allowed ones.
var ErrNotAllowed = errors.New("target not allowed")

// maxTargetLen bounds a target as a query gives it.
const maxTargetLen = 255

// ParseTarget checks HOST[:PORT] (port 9978 unless given) and returns
// the probe's identity, HOST:PORT as it is dialled: an IP address in its
// one canonical form (IPv4-mapped IPv6 unmapped, IPv6 compressed and
// lowercase), the port without leading zeros, a name lowercase without
// its final dot. Two spellings of one target are one target: one probe
// at a time, one result, one busy answer.
func ParseTarget(s string) (string, error) { return parseTarget(s, wire.DefaultPort) }

func parseTarget(s string, defPort uint16) (string, error) {
	if s == "" || len(s) > maxTargetLen {
		return "", fmt.Errorf("target must be HOST[:PORT], 1..%d bytes", maxTargetLen)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), strconv.Itoa(int(defPort))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.ContainsAny(port, "+-") {
		return "", fmt.Errorf("target %q: port must be 1..65535", s)
	}
	if host == "" {
		return "", fmt.Errorf("target %q has no host", s)
	}
	// No IPv6 zone (a link-local scope means nothing to a probe, and a
	// zone may hold any byte, brackets too), no stray brackets.
	if strings.ContainsAny(host, "[]%") {
		return "", fmt.Errorf("target %q: a host is an IP address without a zone, or a DNS name", s)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	} else if host, err = dnsName(host); err != nil {
		return "", fmt.Errorf("target %q: %w", s, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// dnsName returns a host name in its one form (lowercase, no final dot),
// or why it is not one. A name whose last label starts with a digit is
// refused: it is no DNS name but another spelling of an address that
// some resolvers read as one (127.1, 0x7f000001, 127.000.000.001).
func dnsName(h string) (string, error) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", errors.New("a host is an IP address or a DNS name (labels of 1..63 letters, digits and -)")
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "", errors.New("a host is an IP address or a DNS name (letters, digits, - and .)")
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] < 'a' || last[0] > 'z' {
		return "", errors.New("a host is an IP address in its usual form (198.51.100.5, 2001:db8::1) or a DNS name ending in a letter")
	}
	return h, nil
}

// resolve returns what a probe of target (from parseTarget) dials and
// its TLS pin: the targets file's line when it names the target,
// otherwise the address itself if it is in an allowed prefix and the
// port is a serve port (plain TCP). A name the file lacks is refused,
// never looked up. The refusal of a port does not depend on what
// listens there: nothing is dialled.
func (a Allowed) resolve(target string) (Target, error) {
	if i := slices.IndexFunc(a.Targets, func(t Target) bool { return t.Addr == target }); i >= 0 {
		return a.Targets[i], nil
	}
	host, port, _ := net.SplitHostPort(target)
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if len(a.Prefixes) == 0 {
			return Target{}, fmt.Errorf("%w: %s is not in the targets file", ErrNotAllowed, target)
		}
		return Target{}, fmt.Errorf("%w: %s is not in the targets file (a name is probed only when --probe-targets names it; --probe-allow takes addresses)", ErrNotAllowed, target)
	}
	if !a.inPrefix(ip) {
		return Target{}, fmt.Errorf("%w: %s is in no --probe-allow prefix", ErrNotAllowed, ip)
	}
	n, _ := strconv.Atoi(port)
	if !slices.Contains(a.ports(), uint16(n)) {
		return Target{}, fmt.Errorf("%w: port %d is not a serve port of --probe-ports (%s)", ErrNotAllowed, n, portList(a.ports()))
	}
	return Target{Addr: target}, nil
}

func portList(ps []uint16) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// maxTargetsFile bounds the targets file's size.
const maxTargetsFile = 1 << 20

// ReadTargets reads a targets file: one HOST[:PORT] per line, followed
// by the pin of its serve's TLS key when it serves TLS (sha256:HEX, as
// serve prints it); blank lines and lines starting with # are skipped.
// Two lines of one target (as dialled: 198.51.100.5 and
// [::ffff:198.51.100.5]:9978 are one) are refused: with one pinned and
// one not, which one the probe used would decide whether it ran over
// TLS.
func ReadTargets(r io.Reader) ([]Target, error) {
	var out []Target
	lineOf := map[string]int{}
	sc := bufio.NewScanner(io.LimitReader(r, maxTargetsFile+1))
	n, size := 0, 0
	for sc.Scan() {
		n++
		size += len(sc.Bytes()) + 1
		if size > maxTargetsFile {
			return nil, fmt.Errorf("targets file larger than %d bytes", maxTargetsFile)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 2 {
			return nil, fmt.Errorf("targets file line %d: write HOST[:PORT] and, for a serve with TLS, its pin sha256:HEX", n)
		}
		t, err := ParseTarget(f[0])
		if err != nil {
			return nil, fmt.Errorf("targets file line %d: %w", n, err)
		}
		if first, ok := lineOf[t]; ok {
			return nil, fmt.Errorf("targets file lines %d and %d both name %s: keep one line (with the pin if its serve has TLS)", first, n, t)
		}
		lineOf[t] = n
		tg := Target{Addr: t}
		if len(f) == 2 {
			if _, err := secret.ClientTLS(f[1]); err != nil {
				return nil, fmt.Errorf("targets file line %d: %w", n, err)
			}
			tg.Pin = f[1]
		}
		out = append(out, tg)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("targets file: %w", err)
	}
	return out, nil
}
