// Package rtnl gathers the routing and link state that decides TCP
// behaviour on a path: routes with their per-route metrics (initcwnd,
// initrwnd, mtu, advmss, congctl, as `ip route` shows them), the
// default-route interface with its MTU, root qdisc and segmentation
// offloads. It returns plain values; judging them is the audit's job.
//
// Gathering runs in the caller's network namespace: wrap it in netns.Do to
// look at another one.
package rtnl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrNotSupported is returned on systems without rtnetlink.
var ErrNotSupported = errors.New("rtnl: not supported on this system")

// Route is one route with the metrics TCP reads from it
// (include/uapi/linux/rtnetlink.h RTAX_*). Zero metrics are unset.
type Route struct {
	Family   string `json:"family"` // inet or inet6
	Dst      string `json:"dst"`    // "default" or a prefix
	Gateway  string `json:"gateway,omitempty"`
	Dev      string `json:"dev,omitempty"`
	Table    int    `json:"table"`
	Protocol string `json:"protocol,omitempty"`
	InitCwnd int    `json:"initcwnd,omitempty"`
	InitRwnd int    `json:"initrwnd,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	AdvMSS   int    `json:"advmss,omitempty"`
	Congctl  string `json:"congctl,omitempty"`
}

// IsDefault reports whether the route is a default route.
func (r Route) IsDefault() bool { return r.Dst == "default" }

// MainTable is the kernel's main routing table (RT_TABLE_MAIN).
const MainTable = 254

// InMainTable reports whether the route is in the main table (254; 0 when
// a source did not say).
func (r Route) InMainTable() bool { return r.Table == MainTable || r.Table == 0 }

// Prefix returns the destination as a masked prefix: "default" is the
// zero-length prefix of the family, an address without a length a host
// route. It fails when Dst is neither or not of the route's family.
func (r Route) Prefix() (netip.Prefix, error) {
	if r.IsDefault() {
		if r.Family == "inet6" {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), nil
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), nil
	}
	p, err := netip.ParsePrefix(r.Dst)
	if err != nil {
		a, aerr := netip.ParseAddr(r.Dst)
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf("route destination %q: want a prefix such as 203.0.113.0/24, or default", r.Dst)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if (r.Family == "inet6") != p.Addr().Is6() {
		return p, fmt.Errorf("route destination %s is not of family %s", r.Dst, r.Family)
	}
	return p.Masked(), nil
}

// Via is the route's next hop as `ip route` writes it after the
// destination: " via GATEWAY dev DEV", each part only when known.
func (r Route) Via() string {
	s := ""
	if r.Gateway != "" {
		s += " via " + r.Gateway
	}
	if r.Dev != "" {
		s += " dev " + r.Dev
	}
	return s
}

// String names the route as `ip route` does: "DST via GATEWAY dev DEV",
// with "table N" outside the main table.
func (r Route) String() string {
	s := r.Dst + r.Via()
	if !r.InMainTable() {
		s += fmt.Sprintf(" table %d", r.Table)
	}
	return s
}

// MetricsText is what `ip route` prints for the two initial-window
// metrics, or "initcwnd/initrwnd unset".
func (r Route) MetricsText() string {
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

// FindRoute returns the main-table route of family whose destination is
// exactly dst ("default" or a prefix).
func FindRoute(routes []Route, family, dst string) (Route, bool) {
	want, err := Route{Family: family, Dst: dst}.Prefix()
	if err != nil {
		return Route{}, false
	}
	for _, r := range routes {
		if r.Family != family || !r.InMainTable() {
			continue
		}
		if p, err := r.Prefix(); err == nil && p == want {
			return r, true
		}
	}
	return Route{}, false
}

// CoveringRoute returns the main-table route of family that traffic to
// dst follows: the longest prefix containing all of dst. The first of
// equally long prefixes wins, as routes are listed main table and
// default routes first.
func CoveringRoute(routes []Route, family string, dst netip.Prefix) (Route, bool) {
	var best Route
	bestBits := -1
	for _, r := range routes {
		if r.Family != family || !r.InMainTable() {
			continue
		}
		p, err := r.Prefix()
		if err != nil || p.Addr().Is4() != dst.Addr().Is4() || p.Bits() > dst.Bits() || !p.Contains(dst.Addr()) {
			continue
		}
		if p.Bits() > bestBits {
			best, bestBits = r, p.Bits()
		}
	}
	return best, bestBits >= 0
}

// Link is the interface a default route leaves by.
type Link struct {
	Name       string `json:"name"`
	Kind       string `json:"kind,omitempty"`
	MTU        int    `json:"mtu"`
	TxQueueLen int    `json:"txqueuelen"`
	Qdisc      string `json:"qdisc,omitempty"`
	// Offloads holds the segmentation/receive offloads by ethtool name
	// (tcp-segmentation-offload, generic-segmentation-offload,
	// generic-receive-offload, large-receive-offload); absent when the
	// driver does not report them.
	Offloads map[string]bool `json:"offloads,omitempty"`
}

// State is what Gather found.
type State struct {
	Routes      []Route `json:"routes"`
	DefaultLink *Link   `json:"default_link,omitempty"`
	// Problems lists what could not be looked at (a denied ethtool query,
	// say); the rest of State is still valid.
	Problems []string `json:"problems,omitempty"`
}

// DefaultRoutes returns the default routes of the main table.
func (s State) DefaultRoutes() []Route {
	var out []Route
	for _, r := range s.Routes {
		if r.IsDefault() && r.InMainTable() {
			out = append(out, r)
		}
	}
	return out
}
