//go:build linux

package apply

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysctl"
)

var nsKeys = []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_no_metrics_save"}

// nsState is what the namespace holds: the keys' exact text and every
// route with its metrics.
func nsState(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := netns.Do(ns, func() error {
		for _, k := range nsKeys {
			v, err := sysctl.Read(sysctl.DefaultRoot, k)
			if err != nil {
				return err
			}
			out[k] = v
		}
		rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		var lines []string
		for _, r := range rs {
			lines = append(lines, fmt.Sprintf("%v via %v initcwnd %d initrwnd %d", r.Dst, r.Gw, r.InitCwnd, r.InitRwnd))
		}
		sort.Strings(lines)
		out["routes"] = fmt.Sprint(lines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setupNS gives a throwaway namespace a veth uplink, a default route and
// old Ubuntu buffers.
func setupNS(t *testing.T) string {
	t.Helper()
	ns := nstest.New(t)
	err := netns.Do(ns, func() error {
		la := netlink.NewLinkAttrs()
		la.Name = "lh0"
		d := &netlink.Veth{LinkAttrs: la, PeerName: "lh1"}
		if err := netlink.LinkAdd(d); err != nil {
			return fmt.Errorf("add veth: %w", err)
		}
		if peer, err := netlink.LinkByName("lh1"); err == nil {
			_ = netlink.LinkSetUp(peer)
		}
		addr, _ := netlink.ParseAddr("10.9.0.1/24")
		if err := netlink.AddrAdd(d, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(d); err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: d.Attrs().Index, Gw: net.ParseIP("10.9.0.254")}); err != nil {
			return err
		}
		for k, v := range map[string]string{"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"} {
			if err := sysctl.Write(sysctl.DefaultRoot, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func nsPlan(t *testing.T, ns string, req plan.Request) plan.Plan {
	t.Helper()
	s, err := snapshot.Gather(snapshot.Options{Netns: ns})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Make(s, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIntegrationApplyNetns applies a plan inside a throwaway namespace
// (sysctls and a new route via rtnetlink), kills it at every step and
// rolls back, and checks that the host's own values never move.
func TestIntegrationApplyNetns(t *testing.T) {
	ns := setupNS(t)
	hostBefore := map[string]string{}
	for _, k := range nsKeys {
		v, err := sysctl.Read(sysctl.DefaultRoot, k)
		if err != nil {
			t.Fatal(err)
		}
		hostBefore[k] = v
	}
	p := nsPlan(t, ns, plan.Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Dst: netip.MustParsePrefix("203.0.113.0/24")})
	before := nsState(t, ns)
	state := t.TempDir()
	o := Options{Netns: ns, StateDir: state}

	var all []string
	o.Hook = func(s string) error { all = append(all, s); return nil }
	rep, err := Apply(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(all) != "[journal sysctl net.ipv4.tcp_rmem sysctl net.ipv4.tcp_wmem sysctl net.ipv4.tcp_slow_start_after_idle route 203.0.113.0/24 applied]" {
		t.Errorf("steps %q", all)
	}
	after := nsState(t, ns)
	if after["net.ipv4.tcp_rmem"] == before["net.ipv4.tcp_rmem"] || after["routes"] == before["routes"] {
		t.Errorf("apply changed nothing: %v -> %v (report %+v)", before, after, rep.Changes)
	}
	err = netns.Do(ns, func() error {
		_, dst, _ := net.ParseCIDR("203.0.113.0/24")
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dst}, netlink.RT_FILTER_DST)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].InitCwnd != 20 || !rs[0].Gw.Equal(net.ParseIP("10.9.0.254")) {
			return fmt.Errorf("route to 203.0.113.0/24: %+v", rs)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// Rollback takes the namespace from the journal, not the options.
	if _, err := Rollback("", Options{StateDir: state}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, nsState(t, ns)); diff != "" {
		t.Fatalf("after rollback (-want +got):\n%s", diff)
	}

	errKill := errors.New("killed")
	for _, stop := range all {
		o.Hook = func(s string) error {
			if s == stop {
				return errKill
			}
			return nil
		}
		if _, err := Apply(p, o); !errors.Is(err, errKill) {
			t.Fatalf("apply killed at %q: %v", stop, err)
		}
		o.Hook = nil
		if _, err := Rollback("", Options{StateDir: state}); err != nil {
			t.Fatalf("rollback after a kill at %q: %v", stop, err)
		}
		if diff := cmp.Diff(before, nsState(t, ns)); diff != "" {
			t.Errorf("killed at %q, then rolled back (-want +got):\n%s", stop, diff)
		}
	}

	// An existing route's metrics change in place and come back unset.
	pd := nsPlan(t, ns, plan.Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Role: plan.Server, DstDefault: true})
	if _, err := Apply(pd, o); err != nil {
		t.Fatal(err)
	}
	if got := nsState(t, ns)["routes"]; got == before["routes"] {
		t.Errorf("default route unchanged: %s", got)
	}
	if _, err := Rollback("", o); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, nsState(t, ns)); diff != "" {
		t.Errorf("default route after rollback (-want +got):\n%s", diff)
	}

	for _, k := range nsKeys {
		if v, _ := sysctl.Read(sysctl.DefaultRoot, k); v != hostBefore[k] {
			t.Errorf("host %s changed: %q -> %q", k, hostBefore[k], v)
		}
	}
}
