// Package rtnl gathers the routing and link state that decides TCP
// behaviour on a path: routes with their per-route metrics (initcwnd,
// initrwnd, mtu, advmss, congctl, as `ip route` shows them), the
// default-route interface with its MTU, root qdisc and segmentation
// offloads. It returns plain values; judging them is the audit's job.
//
// Gathering runs in the caller's network namespace: wrap it in netns.Do to
// look at another one.
package rtnl

import "errors"

// ErrNotSupported is returned on systems without rtnetlink.
var ErrNotSupported = errors.New("rtnl: not supported on this system")

// Route is one route with the metrics TCP reads from it
// (include/uapi/linux/rtnetlink.h RTAX_*). Zero metrics are unset.
type Route struct {
	Family   string `json:"family"` // inet or inet6
	Dst      string `json:"dst"`    // "default" or a prefix
	Gateway  string `json:"gateway,omitempty"`
	Dev      string `json:"dev,omitempty"`
	Table    int    `json:"table"`
	Protocol string `json:"protocol,omitempty"`
	InitCwnd int    `json:"initcwnd,omitempty"`
	InitRwnd int    `json:"initrwnd,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	AdvMSS   int    `json:"advmss,omitempty"`
	Congctl  string `json:"congctl,omitempty"`
}

// IsDefault reports whether the route is a default route.
func (r Route) IsDefault() bool { return r.Dst == "default" }

// Link is the interface a default route leaves by.
type Link struct {
	Name       string `json:"name"`
	Kind       string `json:"kind,omitempty"`
	MTU        int    `json:"mtu"`
	TxQueueLen int    `json:"txqueuelen"`
	Qdisc      string `json:"qdisc,omitempty"`
	// Offloads holds the segmentation/receive offloads by ethtool name
	// (tcp-segmentation-offload, generic-segmentation-offload,
	// generic-receive-offload, large-receive-offload); absent when the
	// driver does not report them.
	Offloads map[string]bool `json:"offloads,omitempty"`
}

// State is what Gather found.
type State struct {
	Routes      []Route `json:"routes"`
	DefaultLink *Link   `json:"default_link,omitempty"`
	// Problems lists what could not be looked at (a denied ethtool query,
	// say); the rest of State is still valid.
	Problems []string `json:"problems,omitempty"`
}

// DefaultRoutes returns the default routes of the main table.
func (s State) DefaultRoutes() []Route {
	var out []Route
	for _, r := range s.Routes {
		if r.IsDefault() && (r.Table == 254 || r.Table == 0) {
			out = append(out, r)
		}
	}
	return out
}
