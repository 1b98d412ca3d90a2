package apply

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// RouteState is a route as apply needs it: what identifies it and the
// two metrics it changes (0: unset).
type RouteState struct {
	Family   string `json:"family"` // inet or inet6
	Dst      string `json:"dst"`    // a prefix, or "default"
	Gateway  string `json:"gateway,omitempty"`
	Dev      string `json:"dev,omitempty"`
	Table    int    `json:"table"`
	InitCwnd int    `json:"initcwnd,omitempty"`
	InitRwnd int    `json:"initrwnd,omitempty"`
}

func (r RouteState) String() string {
	s := r.Dst
	if r.Gateway != "" {
		s += " via " + r.Gateway
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	if r.Table != 0 && r.Table != 254 {
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// metricsText is what `ip route` would print for the two metrics.
func (r RouteState) metricsText() string {
	var parts []string
	if r.InitCwnd > 0 {
		parts = append(parts, fmt.Sprintf("initcwnd %d", r.InitCwnd))
	}
	if r.InitRwnd > 0 {
		parts = append(parts, fmt.Sprintf("initrwnd %d", r.InitRwnd))
	}
	if len(parts) == 0 {
		return "initcwnd/initrwnd unset"
	}
	return strings.Join(parts, " ")
}

// prefix returns the destination as a prefix ("default" is /0).
func (r RouteState) prefix() (netip.Prefix, error) {
	if r.Dst == "default" {
		if r.Family == "inet6" {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), nil
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	}
	p, err := netip.ParsePrefix(r.Dst)
	if err != nil {
		return p, fmt.Errorf("route destination %q: want a prefix such as 203.0.113.0/24, or default", r.Dst)
	}
	if (r.Family == "inet6") != p.Addr().Is6() {
		return p, fmt.Errorf("route destination %s is not of family %s", r.Dst, r.Family)
	}
	return p.Masked(), nil
}

// Router reads and changes routes; the live one speaks rtnetlink in a
// namespace, tests use a fake that records what it was asked.
type Router interface {
	// Get returns the route to exactly r.Dst in r.Table (main when 0).
	Get(family, dst string, table int) (RouteState, bool, error)
	// Cover returns the main-table route traffic to dst follows now.
	Cover(family, dst string) (RouteState, bool, error)
	// Set makes the route r exist with r's metrics: the existing route to
	// r.Dst in r.Table is changed in place, else r is added.
	Set(r RouteState) error
	// Delete removes the route to r.Dst in r.Table.
	Delete(r RouteState) error
}

// ErrNotSupported is returned for live routes on systems without
// rtnetlink.
var ErrNotSupported = errors.New("apply: routes are not supported on this system")
