package plan

import (
	"net/netip"

	"github.com/longhaul/longhaul/internal/rtnl"
)

// mainTable reports whether a route is in the main table (254; 0 when a
// source did not say).
func mainTable(r rtnl.Route) bool { return r.Table == 254 || r.Table == 0 }

// routePrefix parses a route's destination ("default" is the zero-length
// prefix of its family).
func routePrefix(r rtnl.Route) (netip.Prefix, bool) {
	if r.Dst == "default" {
		if r.Family == "inet6" {
			return netip.PrefixFrom(netip.IPv6Unspecified(), 0), true
		}
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0), true
	}
	p, err := netip.ParsePrefix(r.Dst)
	if err != nil {
		// A host route may be written without a length.
		a, aerr := netip.ParseAddr(r.Dst)
		if aerr != nil {
			return netip.Prefix{}, false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return p.Masked(), true
}

// FindRoute returns the main-table route of family whose destination is
// exactly dst ("default" or a prefix).
func FindRoute(routes []rtnl.Route, family, dst string) (rtnl.Route, bool) {
	want, ok := routePrefix(rtnl.Route{Family: family, Dst: dst})
	if !ok {
		return rtnl.Route{}, false
	}
	for _, r := range routes {
		if r.Family != family || !mainTable(r) {
			continue
		}
		if p, ok := routePrefix(r); ok && p == want {
			return r, true
		}
	}
	return rtnl.Route{}, false
}

// CoveringRoute returns the main-table route of family that traffic to
// dst follows: the longest prefix containing all of dst. The first of
// equally long prefixes wins, as routes are listed main table and
// default routes first.
func CoveringRoute(routes []rtnl.Route, family string, dst netip.Prefix) (rtnl.Route, bool) {
	var best rtnl.Route
	bestBits := -1
	for _, r := range routes {
		if r.Family != family || !mainTable(r) {
			continue
		}
		p, ok := routePrefix(r)
		if !ok || p.Addr().Is4() != dst.Addr().Is4() || p.Bits() > dst.Bits() || !p.Contains(dst.Addr()) {
			continue
		}
		if p.Bits() > bestBits {
			best, bestBits = r, p.Bits()
		}
	}
	return best, bestBits >= 0
}
