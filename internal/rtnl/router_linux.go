//go:build linux

package rtnl

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

// Router reads and changes routes and their initcwnd/initrwnd over
// rtnetlink, inside a named namespace when one is given (a netlink
// socket belongs to the namespace of the thread that opened it): the one
// writer of route metrics, for apply and the lab.
type Router struct{ netns string }

// NewRouter is the router of namespace ns ("" this process's).
func NewRouter(ns string) Router { return Router{netns: ns} }

func (n Router) do(fn func(h *netlink.Handle) error) error {
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

func mainIfZero(t int) int {
	if t == 0 {
		return unix.RT_TABLE_MAIN
	}
	return t
}

// find returns the index of the route to dst in the listed routes.
func find(st []Route, family, dst string) int {
	want, err := Route{Family: family, Dst: dst}.Prefix()
	if err != nil {
		return -1
	}
	for i, s := range st {
		if p, err := s.Prefix(); err == nil && p == want {
			return i
		}
	}
	return -1
}

// list returns the unicast routes of one table.
func list(h *netlink.Handle, family string, table int) ([]netlink.Route, []Route, error) {
	nl, st, err := ListRoutes(h, family, table)
	if err != nil {
		return nil, nil, fmt.Errorf("list routes: %w", err)
	}
	return nl, st, nil
}

// Get returns the route to exactly dst in table (main when 0).
func (n Router) Get(family, dst string, table int) (Route, bool, error) {
	var out Route
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

// Cover returns the main-table route traffic to dst follows now.
func (n Router) Cover(family, dst string) (Route, bool, error) {
	var out Route
	found := false
	err := n.do(func(h *netlink.Handle) error {
		_, st, err := list(h, family, unix.RT_TABLE_MAIN)
		if err != nil {
			return err
		}
		p, err := Route{Family: family, Dst: dst}.Prefix()
		if err != nil {
			return err
		}
		out, found = CoveringRoute(st, family, p)
		return nil
	})
	return out, found, err
}

// Set makes the route r exist with r's initcwnd/initrwnd: the route to
// r.Dst in r.Table is changed in place, else r is added.
func (n Router) Set(r Route) error {
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
		p, err := r.Prefix()
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

// Delete removes the route to r.Dst in r.Table (none: nothing to do).
func (n Router) Delete(r Route) error {
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
