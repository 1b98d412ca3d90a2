package plan

import (
	"fmt"
	"net/netip"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/units"
)

// Target is the route the item makes exist: its destination, next hop
// and table with the planned metrics.
func (r Route) Target() rtnl.Route {
	return rtnl.Route{Family: r.Family, Dst: r.Dst, Gateway: r.Gateway, Dev: r.Dev, Table: r.Table, InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd}
}

// route plans initcwnd/initrwnd on the route to the destination.
func (b *builder) route() {
	if !b.req.Dst.IsValid() && !b.req.DstDefault {
		b.note("initcwnd/initrwnd: give --dst PREFIX (or --dst default) to plan initial windows for short responses to a destination")
		return
	}
	rt, now, lookedUp := b.routeTarget()
	if !rt.Exists && b.req.DstDefault {
		b.warn("no default route in the snapshot: initial windows not planned")
		return
	}
	w := b.routeWindows(rt, now)
	if rt.InitCwnd == 0 && rt.InitRwnd == 0 {
		b.note("route %s: initial windows already at least %d segments: left alone", rt.Dst, w.cand)
		return
	}
	b.routeItem(rt, now, lookedUp, w)
}

// routeTarget returns the item's target for the requested destination
// and the route traffic to it follows today (lookedUp false: the
// snapshot has no routes).
func (b *builder) routeTarget() (rt *Route, now rtnl.Route, lookedUp bool) {
	dst, family := b.req.Dst, "inet"
	dstText := "default"
	if b.req.DstDefault {
		dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	} else {
		dstText = dst.String()
		if dst.Addr().Is6() {
			family = "inet6"
		}
	}
	rt = &Route{Family: family, Dst: dstText}
	if b.s.Net != nil {
		if r, ok := rtnl.FindRoute(b.s.Net.Routes, family, dstText); ok {
			now, lookedUp, rt.Exists = r, true, true
		} else if r, ok := rtnl.CoveringRoute(b.s.Net.Routes, family, dst); ok {
			now, lookedUp = r, true
		}
	}
	if lookedUp {
		rt.Gateway, rt.Dev, rt.Table = now.Gateway, now.Dev, now.Table
		rt.DHCP = now.Protocol == "dhcp"
	} else {
		b.note("route to %s: the snapshot has no routes (--root and --snapshot cannot see them): apply looks up the route it follows", dstText)
	}
	return rt, now, lookedUp
}

// initWindows is the model input for a short response on the route
// today, the route's current initcwnd (0: unset or implausible) and the
// initial window the plan would set.
type initWindows struct {
	in      pathmodel.Input
	curCwnd int
	cand    int
}

// routeWindows sets the target's metrics where the planned initial
// window is larger than today's.
func (b *builder) routeWindows(rt *Route, now rtnl.Route) initWindows {
	in := b.in
	in.TransferBytes = b.req.ResponseBytes
	in.InitCwnd, in.InitRwnd = now.InitCwnd, now.InitRwnd
	if in.InitCwnd < 0 || in.InitCwnd > pathmodel.MaxInitWindow || in.InitRwnd < 0 || in.InitRwnd > pathmodel.MaxInitWindow {
		in.InitCwnd, in.InitRwnd = 0, 0
	}
	curCwnd, curRwnd := in.InitCwnd, in.InitRwnd
	oldKernel := b.s.Kernel.Release != "" && !b.s.Kernel.AtLeast(4, 19)
	// The initial burst should not exceed the path's BDP.
	cand := max(pathmodel.DefaultInitCwnd, min(PlannedInitCwnd, int(b.now.FlowBDPBytes/int64(b.mss()))))
	if b.req.Role.sends() && max(curCwnd, pathmodel.DefaultInitCwnd) < cand {
		rt.InitCwnd = cand
	}
	if b.req.Role.receives() {
		if oldKernel && max(curRwnd, 10) < cand {
			rt.InitRwnd = cand
		} else if !oldKernel {
			b.note("initrwnd: since Linux 4.19 a receiver offers up to 64 KB in its SYN-ACK and the route's initrwnd can only lower it: left alone")
		}
		if !b.req.Role.sends() {
			// The far end is assumed to send with the planned initcwnd.
			in.InitCwnd = max(curCwnd, cand)
		}
	}
	return initWindows{in: in, curCwnd: curCwnd, cand: cand}
}

// routeItem adds the route item when the planned metrics save round
// trips on a short response.
func (b *builder) routeItem(rt *Route, now rtnl.Route, lookedUp bool, w initWindows) {
	before, err1 := pathmodel.Compute(w.in)
	after := w.in
	if rt.InitCwnd > 0 {
		after.InitCwnd = rt.InitCwnd
	}
	if rt.InitRwnd > 0 {
		after.InitRwnd = rt.InitRwnd
	}
	planned, err2 := pathmodel.Compute(after)
	if err1 != nil || err2 != nil || before.Transfer == nil || planned.Transfer == nil {
		b.warn("route %s: the model could not time a %s response: not planned", rt.Dst, units.FormatBytes(float64(b.req.ResponseBytes)))
		return
	}
	bt, pt := before.Transfer, planned.Transfer
	if pt.RoundTrips >= bt.RoundTrips {
		b.note("route %s: a %s response takes %d round trips with initcwnd %d and would not take fewer with %d: left alone",
			rt.Dst, units.FormatBytes(float64(b.req.ResponseBytes)), bt.RoundTrips, max(w.curCwnd, pathmodel.DefaultInitCwnd), w.cand)
		return
	}
	where := fmt.Sprintf("only the route to %s changes, not the whole host", rt.Dst)
	if b.req.DstDefault {
		where = "on the default route: every destination without a more specific route"
	}
	b.add(Item{
		Key: "route " + rt.Dst, Kind: KindRoute,
		Current: routeNow(rt, now, lookedUp),
		New:     routeNew(rt),
		Why: fmt.Sprintf("a new connection sends at most min(initcwnd, the receiver's initial window) in its first round trip and doubles per round trip after: a %s response takes %d round trips (%s) from SYN to last byte now, %d (%s) with %s; %s",
			units.FormatBytes(float64(b.req.ResponseBytes)), bt.RoundTrips, units.FormatDuration(secs(bt.Seconds)), pt.RoundTrips, units.FormatDuration(secs(pt.Seconds)), rt.Target().MetricsText(), where),
		Route: rt,
	})
}

func showMetric(name string, v int) string {
	if v == 0 {
		return name + " unset"
	}
	return fmt.Sprintf("%s %d", name, v)
}

func routeNow(rt *Route, now rtnl.Route, lookedUp bool) string {
	m := showMetric("initcwnd", now.InitCwnd) + ", " + showMetric("initrwnd", now.InitRwnd)
	switch {
	case rt.Exists:
		return rt.Dst + now.Via() + ": " + m
	case lookedUp:
		return fmt.Sprintf("no route for %s: it follows %s%s (%s)", rt.Dst, now.Dst, now.Via(), m)
	}
	return "unknown: no routes in the snapshot"
}

// routeNew is the change as a sentence: "[add ]DST via GW dev DEV
// METRICS".
func routeNew(rt *Route) string {
	t := rt.Target()
	s := t.Dst + t.Via()
	if !rt.Exists {
		s = "add " + s
	}
	return s + " " + t.MetricsText()
}
