package exporter

import (
	"net/netip"
	"slices"

	"github.com/longhaul/longhaul/internal/flows"
)

// match says whether a socket is one of the host's flows the exporter
// counts: connected, not longhaul test traffic (Config.TestPorts), and
// on one of Config.Ports when some are given.
func (t *Tracker) match(s flows.Sock) bool {
	if !s.Remote.Addr().IsValid() || s.Remote.Addr().IsUnspecified() || s.Remote.Port() == 0 {
		return false
	}
	if slices.Contains(t.cfg.TestPorts, s.Local.Port()) || slices.Contains(t.cfg.TestPorts, s.Remote.Port()) {
		return false
	}
	if len(t.cfg.Ports) == 0 {
		return true
	}
	return slices.Contains(t.cfg.Ports, s.Local.Port()) || slices.Contains(t.cfg.Ports, s.Remote.Port())
}

// Subnet is the per-subnet group of a peer: its /24 (IPv4) or /48 (IPv6).
func Subnet(a netip.Addr) netip.Prefix {
	bits := 48
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

// groupFor returns the group a peer's counters go to now.
func (t *Tracker) groupFor(a netip.Addr) *groupState {
	for _, g := range t.named {
		if g.Prefix.Contains(a) {
			return t.groups[g.Name]
		}
	}
	if g, ok := t.subnets[Subnet(a)]; ok {
		return g
	}
	return t.groups[Other]
}

func (t *Tracker) isNamed(a netip.Addr) bool {
	return slices.ContainsFunc(t.named, func(g Group) bool { return g.Prefix.Contains(a) })
}
