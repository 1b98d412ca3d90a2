package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost"
)

// Allowed is the set of targets a probe may be pointed at: addresses in
// a prefix, and targets named in a file. Nothing is allowed by default:
// a query must not be able to point the exporter at an arbitrary host.
type Allowed struct {
	Prefixes []netip.Prefix
	// Targets are those of the targets file (a name there is trusted as
	// the operator wrote it, whatever it resolves to).
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

// ErrNotAllowed marks a target outside the allowed ones.
var ErrNotAllowed = errors.New("target not allowed")

// maxTargetLen bounds a target as a query gives it.
const maxTargetLen = 255

// ParseTarget checks HOST[:PORT] (port 9978 unless given) and returns it
// as HOST:PORT.
func ParseTarget(s string) (string, error) {
	if s == "" || len(s) > maxTargetLen {
		return "", fmt.Errorf("target must be HOST[:PORT], 1..%d bytes", maxTargetLen)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), strconv.Itoa(twohost.DefaultPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
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
	if _, err := netip.ParseAddr(host); err != nil {
		for _, r := range host {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
				return "", fmt.Errorf("target %q: a host is an IP address or a DNS name (letters, digits, - and .)", s)
			}
		}
	}
	return net.JoinHostPort(host, port), nil
}

// Resolver looks up a host's addresses (net.DefaultResolver's
// LookupNetIP in production).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// resolve returns the address to dial for target (HOST:PORT from
// ParseTarget) and its TLS pin: the target itself when the targets file
// names it, otherwise the first of its addresses inside an allowed
// prefix (plain TCP); the address dialled is the one checked, so a name
// that resolves again differently (DNS rebinding) cannot move the probe
// elsewhere.
func (a Allowed) resolve(ctx context.Context, target string, lookup Resolver) (Target, error) {
	if i := slices.IndexFunc(a.Targets, func(t Target) bool { return t.Addr == target }); i >= 0 {
		return a.Targets[i], nil
	}
	dial, err := a.resolveAddr(ctx, target, lookup)
	return Target{Addr: dial}, err
}

func (a Allowed) resolveAddr(ctx context.Context, target string, lookup Resolver) (string, error) {
	host, port, _ := net.SplitHostPort(target)
	if ip, err := netip.ParseAddr(host); err == nil {
		if a.inPrefix(ip) {
			return target, nil
		}
		return "", fmt.Errorf("%w: %s is in no --probe-allow prefix", ErrNotAllowed, ip)
	}
	if len(a.Prefixes) == 0 {
		return "", fmt.Errorf("%w: %s is not in the targets file", ErrNotAllowed, target)
	}
	ips, err := lookup(ctx, host)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrNotAllowed, host, err)
	}
	for _, ip := range ips {
		if a.inPrefix(ip) {
			return net.JoinHostPort(ip.Unmap().String(), port), nil
		}
	}
	return "", fmt.Errorf("%w: no address of %s is in a --probe-allow prefix", ErrNotAllowed, host)
}

// maxTargetsFile bounds the targets file's size.
const maxTargetsFile = 1 << 20

// ReadTargets reads a targets file: one HOST[:PORT] per line, followed
// by the pin of its serve's TLS key when it serves TLS (sha256:HEX, as
// serve prints it); blank lines and lines starting with # are skipped.
func ReadTargets(r io.Reader) ([]Target, error) {
	var out []Target
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
