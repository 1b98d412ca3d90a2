//go:build linux

package apply

import "github.com/longhaul/longhaul/internal/rtnl"

// netlinkRouter is rtnl's router, each route it reads kept to what apply
// journals.
type netlinkRouter struct{ r rtnl.Router }

func newNetlinkRouter(ns string) Router { return netlinkRouter{rtnl.NewRouter(ns)} }

func (n netlinkRouter) Get(family, dst string, table int) (rtnl.Route, bool, error) {
	r, ok, err := n.r.Get(family, dst, table)
	return journaled(r), ok, err
}

func (n netlinkRouter) Cover(family, dst string) (rtnl.Route, bool, error) {
	r, ok, err := n.r.Cover(family, dst)
	return journaled(r), ok, err
}

func (n netlinkRouter) Set(r rtnl.Route) error    { return n.r.Set(r) }
func (n netlinkRouter) Delete(r rtnl.Route) error { return n.r.Delete(r) }
