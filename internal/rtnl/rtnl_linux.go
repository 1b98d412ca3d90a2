package rtnl

import (
	"fmt"
	"sort"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// offloadFeatures maps ethtool's feature-string names to the names
// `ethtool -k` prints for them.
var offloadFeatures = map[string]string{
	"tx-tcp-segmentation":     "tcp-segmentation-offload",
	"tx-generic-segmentation": "generic-segmentation-offload",
	"rx-gro":                  "generic-receive-offload",
	"rx-lro":                  "large-receive-offload",
}

// Gather reads routes of all tables and the default-route link from the
// current network namespace.
func Gather() (State, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return State{}, fmt.Errorf("rtnl: open netlink: %w", err)
	}
	defer h.Close()
	var st State
	for _, fam := range []string{"inet", "inet6"} {
		_, routes, err := ListRoutes(h, fam, unix.RT_TABLE_UNSPEC)
		if err != nil {
			return st, fmt.Errorf("rtnl: list routes: %w", err)
		}
		for _, r := range routes {
			if r.Table != unix.RT_TABLE_LOCAL {
				st.Routes = append(st.Routes, r)
			}
		}
	}
	sort.SliceStable(st.Routes, func(i, j int) bool {
		a, b := st.Routes[i], st.Routes[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.Table != b.Table {
			return a.Table > b.Table // main (254) first
		}
		return a.IsDefault() && !b.IsDefault()
	})
	if d := st.DefaultRoutes(); len(d) > 0 && d[0].Dev != "" {
		l, problems := link(h, d[0].Dev)
		st.DefaultLink = l
		st.Problems = append(st.Problems, problems...)
	}
	return st, nil
}

// NetlinkFamily is the address family netlink wants for "inet" or
// "inet6".
func NetlinkFamily(family string) int {
	if family == "inet6" {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// ListRoutes returns the unicast routes of family ("inet" or "inet6") in
// table (RT_TABLE_UNSPEC: every table) as netlink has them and, in the
// same order, as Routes. The netlink values are what a caller changing a
// route hands back to the kernel.
func ListRoutes(h *netlink.Handle, family string, table int) ([]netlink.Route, []Route, error) {
	routes, err := h.RouteListFiltered(NetlinkFamily(family), &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, nil, err
	}
	var nl []netlink.Route
	var out []Route
	for _, r := range routes {
		if r.Type != unix.RTN_UNICAST {
			continue
		}
		nl = append(nl, r)
		out = append(out, FromNetlink(h, family, r))
	}
	return nl, out, nil
}

// FromNetlink converts a netlink route of family ("inet" or "inet6"),
// naming its device through h.
func FromNetlink(h *netlink.Handle, family string, r netlink.Route) Route {
	out := Route{
		Family:   family,
		Dst:      "default",
		Table:    r.Table,
		Protocol: r.Protocol.String(),
		InitCwnd: r.InitCwnd,
		InitRwnd: r.InitRwnd,
		MTU:      r.MTU,
		AdvMSS:   r.AdvMSS,
		Congctl:  r.Congctl,
	}
	if r.Dst != nil {
		if ones, _ := r.Dst.Mask.Size(); ones > 0 || !r.Dst.IP.IsUnspecified() {
			out.Dst = r.Dst.String()
		}
	}
	if r.Gw != nil {
		out.Gateway = r.Gw.String()
	}
	if l, err := h.LinkByIndex(r.LinkIndex); err == nil {
		out.Dev = l.Attrs().Name
	}
	return out
}

func link(h *netlink.Handle, name string) (*Link, []string) {
	l, err := h.LinkByName(name)
	if err != nil {
		return nil, []string{fmt.Sprintf("link %s: %v", name, err)}
	}
	a := l.Attrs()
	out := &Link{Name: a.Name, Kind: l.Type(), MTU: a.MTU, TxQueueLen: a.TxQLen}
	var problems []string
	if qs, err := h.QdiscList(l); err != nil {
		problems = append(problems, fmt.Sprintf("qdisc of %s: %v", name, err))
	} else {
		for _, q := range qs {
			if q.Attrs().Parent == netlink.HANDLE_ROOT {
				out.Qdisc = q.Type()
			}
		}
	}
	et, err := ethtool.NewEthtool()
	if err != nil {
		return out, append(problems, fmt.Sprintf("ethtool: %v", err))
	}
	defer et.Close()
	feats, err := et.Features(name)
	if err != nil {
		return out, append(problems, fmt.Sprintf("offloads of %s: %v", name, err))
	}
	out.Offloads = map[string]bool{}
	for k, v := range feats {
		if n, ok := offloadFeatures[k]; ok {
			out.Offloads[n] = v
		}
	}
	return out, problems
}
