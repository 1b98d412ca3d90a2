//go:build linux

package apply

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
)

// netlinkRouter changes routes over rtnetlink, inside a named namespace
// when one is given (a netlink socket belongs to the namespace of the
// thread that opened it).
type netlinkRouter struct{ netns string }

func newNetlinkRouter(ns string) Router { return netlinkRouter{netns: ns} }

func (n netlinkRouter) do(fn func(h *netlink.Handle) error) error {
	body := func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("open netlink: %w", err)
		}
		defer h.Close()
		return fn(h)
	}
	if n.netns == "" {
		return body()
	}
	return netns.Do(n.netns, body)
}

func nlFamily(f string) int {
	if f == "inet6" {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

func mainIfZero(t int) int {
	if t == 0 {
		return unix.RT_TABLE_MAIN
	}
	return t
}

// list returns the unicast routes of one table with their state.
func list(h *netlink.Handle, family string, table int) ([]netlink.Route, []RouteState, error) {
	routes, err := h.RouteListFiltered(nlFamily(family), &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, nil, fmt.Errorf("list routes: %w", err)
	}
	var nl []netlink.Route
	var st []RouteState
	for _, r := range routes {
		if r.Type != unix.RTN_UNICAST {
			continue
		}
		s := RouteState{Family: family, Dst: "default", Table: r.Table, InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd}
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones > 0 || !r.Dst.IP.IsUnspecified() {
				s.Dst = r.Dst.String()
			}
		}
		if r.Gw != nil {
			s.Gateway = r.Gw.String()
		}
		if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
			s.Dev = l.Attrs().Name
		}
		nl = append(nl, r)
		st = append(st, s)
	}
	return nl, st, nil
}

// find returns the index of the route to dst in the listed routes.
func find(st []RouteState, family, dst string) int {
	want, err := RouteState{Family: family, Dst: dst}.prefix()
	if err != nil {
		return -1
	}
	for i, s := range st {
		if p, err := s.prefix(); err == nil && p == want {
			return i
		}
	}
	return -1
}

func (n netlinkRouter) Get(family, dst string, table int) (RouteState, bool, error) {
	var out RouteState
	found := false
	err := n.do(func(h *netlink.Handle) error {
		_, st, err := list(h, family, mainIfZero(table))
		if err != nil {
			return err
		}
		if i := find(st, family, dst); i >= 0 {
			out, found = st[i], true
		}
		return nil
	})
	return out, found, err
}

func (n netlinkRouter) Cover(family, dst string) (RouteState, bool, error) {
	var out RouteState
	found := false
	err := n.do(func(h *netlink.Handle) error {
		_, st, err := list(h, family, unix.RT_TABLE_MAIN)
		if err != nil {
			return err
		}
		p, err := RouteState{Family: family, Dst: dst}.prefix()
		if err != nil {
			return err
		}
		rs := make([]rtnl.Route, len(st))
		for i, s := range st {
			rs[i] = rtnl.Route{Family: s.Family, Dst: s.Dst, Gateway: s.Gateway, Dev: s.Dev, Table: s.Table, InitCwnd: s.InitCwnd, InitRwnd: s.InitRwnd}
		}
		if r, ok := plan.CoveringRoute(rs, family, p); ok {
			out, found = RouteState{Family: family, Dst: r.Dst, Gateway: r.Gateway, Dev: r.Dev, Table: r.Table, InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd}, true
		}
		return nil
	})
	return out, found, err
}

func (n netlinkRouter) Set(r RouteState) error {
	return n.do(func(h *netlink.Handle) error {
		nl, st, err := list(h, r.Family, mainIfZero(r.Table))
		if err != nil {
			return err
		}
		if i := find(st, r.Family, r.Dst); i >= 0 {
			cur := nl[i]
			cur.InitCwnd, cur.InitRwnd = r.InitCwnd, r.InitRwnd
			if err := h.RouteReplace(&cur); err != nil {
				return fmt.Errorf("route %s: replace: %w", r, err)
			}
			return nil
		}
		p, err := r.prefix()
		if err != nil {
			return err
		}
		add := netlink.Route{
			Dst:      &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
			Table:    mainIfZero(r.Table),
			InitCwnd: r.InitCwnd,
			InitRwnd: r.InitRwnd,
			Protocol: unix.RTPROT_STATIC,
		}
		if r.Gateway != "" {
			add.Gw = net.ParseIP(r.Gateway)
		}
		if r.Dev != "" {
			l, err := h.LinkByName(r.Dev)
			if err != nil {
				return fmt.Errorf("route %s: device %s: %w", r, r.Dev, err)
			}
			add.LinkIndex = l.Attrs().Index
		}
		if err := h.RouteAdd(&add); err != nil {
			return fmt.Errorf("route %s: add: %w", r, err)
		}
		return nil
	})
}

func (n netlinkRouter) Delete(r RouteState) error {
	return n.do(func(h *netlink.Handle) error {
		nl, st, err := list(h, r.Family, mainIfZero(r.Table))
		if err != nil {
			return err
		}
		i := find(st, r.Family, r.Dst)
		if i < 0 {
			return nil
		}
		if err := h.RouteDel(&nl[i]); err != nil {
			return fmt.Errorf("route %s: delete: %w", r, err)
		}
		return nil
	})
}
