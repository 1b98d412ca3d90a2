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

	"github.com/longhaul/longhaul/internal/twohost"
)

// Allowed is the set of targets a probe may be pointed at: addresses in
// a prefix, and targets named in a file. Nothing is allowed by default:
// a query must not be able to point the exporter at an arbitrary host.
type Allowed struct {
	Prefixes []netip.Prefix
	// Targets are HOST:PORT as written in the targets file (a name there
	// is trusted as the operator wrote it, whatever it resolves to).
	Targets []string
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
// ParseTarget): the target itself when the targets file names it,
// otherwise the first of its addresses inside an allowed prefix; the
// address dialled is the one checked, so a name that resolves again
// differently (DNS rebinding) cannot move the probe elsewhere.
func (a Allowed) resolve(ctx context.Context, target string, lookup Resolver) (string, error) {
	if slices.Contains(a.Targets, target) {
		return target, nil
	}
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

// ReadTargets reads a targets file: one HOST[:PORT] per line; blank
// lines and lines starting with # are skipped.
func ReadTargets(r io.Reader) ([]string, error) {
	var out []string
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
		t, err := ParseTarget(line)
		if err != nil {
			return nil, fmt.Errorf("targets file line %d: %w", n, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("targets file: %w", err)
	}
	return out, nil
}
