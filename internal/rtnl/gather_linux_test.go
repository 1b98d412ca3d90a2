package rtnl

import (
	"net"
	"testing"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/vishvananda/netlink"
)

// TestIntegrationRouteMetrics builds a default route with initcwnd and
// initrwnd in a throwaway namespace and checks Gather reports them, with
// the default link's MTU and offloads.
func TestIntegrationRouteMetrics(t *testing.T) {
	ns := nstest.New(t)
	var st State
	err := netns.Do(ns, func() error {
		la := netlink.NewLinkAttrs()
		la.Name, la.MTU = "lhveth0", 1400
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "lhveth1"}); err != nil {
			return err
		}
		l, err := netlink.LinkByName("lhveth0")
		if err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("198.18.0.1/30")
		if err := netlink.AddrAdd(l, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		_, any4, _ := net.ParseCIDR("0.0.0.0/0")
		if err := netlink.RouteAdd(&netlink.Route{Dst: any4, Gw: net.ParseIP("198.18.0.2"), LinkIndex: l.Attrs().Index, InitCwnd: 20, InitRwnd: 30}); err != nil {
			return err
		}
		st, err = Gather()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := st.DefaultRoutes()
	if len(d) != 1 {
		t.Fatalf("default routes = %+v, want one", d)
	}
	want := Route{Family: "inet", Dst: "default", Gateway: "198.18.0.2", Dev: "lhveth0", Table: 254, Protocol: "boot", InitCwnd: 20, InitRwnd: 30}
	if d[0] != want {
		t.Errorf("default route = %+v, want %+v", d[0], want)
	}
	if st.DefaultLink == nil || st.DefaultLink.Name != "lhveth0" || st.DefaultLink.MTU != 1400 {
		t.Fatalf("default link = %+v, want lhveth0 with MTU 1400", st.DefaultLink)
	}
}
