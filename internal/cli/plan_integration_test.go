//go:build linux

package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// TestIntegrationPlanApplyNetns runs plan, apply and rollback on a
// throwaway namespace through the command line: per-namespace sysctls
// and a route change, host-wide items skipped, and the host untouched.
func TestIntegrationPlanApplyNetns(t *testing.T) {
	ns := nstest.New(t)
	err := netns.Do(ns, func() error {
		la := netlink.NewLinkAttrs()
		la.Name = "lh0"
		v := &netlink.Veth{LinkAttrs: la, PeerName: "lh1"}
		if err := netlink.LinkAdd(v); err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("10.9.0.1/24")
		if err := netlink.AddrAdd(v, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(v); err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: v.Attrs().Index, Gw: net.ParseIP("10.9.0.254")}); err != nil {
			return err
		}
		return sysctl.Write(sysctl.DefaultRoot, "net.ipv4.tcp_rmem", "4096 131072 6291456")
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(key string) string {
		var v string
		if err := netns.Do(ns, func() (err error) { v, err = sysctl.Read(sysctl.DefaultRoot, key); return }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	routes := func() string {
		var out []string
		_ = netns.Do(ns, func() error {
			rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
			for _, r := range rs {
				out = append(out, r.String())
			}
			return err
		})
		return strings.Join(out, "\n")
	}
	hostRmem, _ := sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_rmem")
	rmemBefore, routesBefore := read("net.ipv4.tcp_rmem"), routes()
	dir := t.TempDir()
	planFile, state := filepath.Join(dir, "plan.json"), filepath.Join(dir, "journal")

	planMustRun(t, "plan", "--netns", ns, "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "--app-buffers", "--state-dir", state, "-o", planFile)
	if _, err := os.Stat(planFile); err != nil {
		t.Fatal(err)
	}
	out := planMustRun(t, "apply", planFile, "--netns", ns, "--state-dir", state)
	if !strings.Contains(out, "Transaction 0001: applied") || !strings.Contains(out, "net.core.rmem_max") || !strings.Contains(out, "[skipped]") {
		t.Errorf("apply:\n%s", out)
	}
	if got := read("net.ipv4.tcp_rmem"); got == rmemBefore {
		t.Errorf("tcp_rmem unchanged in the namespace: %s", got)
	}
	if !strings.Contains(routes(), "203.0.113.0/24") {
		t.Errorf("no route to 203.0.113.0/24:\n%s", routes())
	}
	// rollback finds the namespace in the journal.
	out = planMustRun(t, "rollback", "--state-dir", state)
	if !strings.Contains(out, "rolled back") {
		t.Errorf("rollback:\n%s", out)
	}
	if got := read("net.ipv4.tcp_rmem"); got != rmemBefore {
		t.Errorf("tcp_rmem after rollback %q, want %q", got, rmemBefore)
	}
	if got := routes(); got != routesBefore {
		t.Errorf("routes after rollback:\n%s\nwant:\n%s", got, routesBefore)
	}
	if after, _ := sysctl.Read(sysctl.DefaultRoot, "net.ipv4.tcp_rmem"); after != hostRmem {
		t.Errorf("host tcp_rmem changed: %q -> %q", hostRmem, after)
	}
}
