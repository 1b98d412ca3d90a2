package emit

import (
	"fmt"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
)

// sysctlD is the sysctl.d file apply --persist would write, without the
// transaction header.
func sysctlD(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString(header(p, "sysctl.d", "Install as "+apply.SysctlDropIn+"; systemd-sysctl applies it at boot, sysctl -p "+apply.SysctlDropIn+" now."))
	ss := Sysctls(p)
	if len(ss) == 0 {
		b.WriteString("# The plan changes no sysctl.\n")
	}
	for _, s := range ss {
		scope := ""
		if s.Host {
			scope = " (host-wide)"
		}
		fmt.Fprintf(&b, "\n# was %s on the planning host%s\n%s", s.Current, scope, apply.SysctlLine(s.Key, s.Value))
	}
	if rs := routes(p); len(rs) > 0 {
		fmt.Fprintf(&b, "\n# Routes are not sysctls: %d planned route(s) need --emit networkd, nm or nmstate.\n", len(rs))
	}
	return b.String(), nil
}

// networkd is the [Route] drop-in apply --persist writes, one section per
// route; the .network file it belongs to is the target host's.
func networkd(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString(header(p, "networkd", "Install as /etc/systemd/network/NAME.network.d/90-longhaul.conf, NAME.network being the file\n# that configures the interface below (networkctl status IFACE shows it), then: networkctl reload"))
	rs := routes(p)
	if len(rs) == 0 {
		return "", noRoutes()
	}
	for _, r := range rs {
		fmt.Fprintf(&b, "\n# %s, interface %s\n%s", r.Dst, orDash(r.Dev), apply.NetworkdRoute(r.Route, r.DHCP))
	}
	if ss := Sysctls(p); len(ss) > 0 {
		fmt.Fprintf(&b, "\n# %d sysctl(s) are not networkd's: use --emit sysctl.d.\n", len(ss))
	}
	return b.String(), nil
}

// nm is a shell script of the nmcli commands apply prints for routes
// NetworkManager manages.
func nm(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString(header(p, "nm", "Run as root on a host whose interface NetworkManager manages; the route persists in the connection."))
	b.WriteString("set -e\n")
	rs := routes(p)
	if len(rs) == 0 {
		return "", noRoutes()
	}
	for _, r := range rs {
		if r.Dev == "" {
			return "", badinput.Errorf("route %s: the plan does not name its interface (made from --root or --snapshot without routes): make the plan on the host", r.Dst)
		}
		fmt.Fprintf(&b, "\n# %s via %s\n%s\n", r.Dst, r.Dev, apply.NMCommand(r.Route))
	}
	if ss := Sysctls(p); len(ss) > 0 {
		fmt.Fprintf(&b, "\n# %d sysctl(s) are not NetworkManager's: use --emit sysctl.d.\n", len(ss))
	}
	return b.String(), nil
}

// tuned is a tuned profile with a [sysctl] section. tuned writes each
// value and, in verify, compares it with what the kernel reads back
// after collapsing whitespace, so single spaces stay idempotent.
func tuned(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString(header(p, "tuned", "Install as /etc/tuned/longhaul/tuned.conf and stack it on the active profile:\n#   tuned-adm profile \"$(tuned-adm active | sed -n 's/^Current active profile: //p')\" longhaul"))
	fmt.Fprintf(&b, "\n[main]\nsummary=longhaul plan: %s\n", apply.Summary(p))
	ss := Sysctls(p)
	b.WriteString("\n[sysctl]\n")
	if len(ss) == 0 {
		b.WriteString("# The plan changes no sysctl.\n")
	}
	for _, s := range ss {
		fmt.Fprintf(&b, "%s=%s\n", s.Key, s.Value)
	}
	if rs := routes(p); len(rs) > 0 {
		fmt.Fprintf(&b, "\n# tuned has no route plugin: %d planned route(s) need --emit networkd, nm or nmstate.\n", len(rs))
	}
	return b.String(), nil
}

// noRoutes refuses a route-only format for a plan without routes: its
// file would carry nothing.
func noRoutes() error {
	return badinput.Errorf("it writes routes and this plan changes none: plan with --dst HOST (the far end) to plan its initial windows, or use --emit sysctl.d for the sysctls")
}
