package apply

import (
	"errors"

	"github.com/longhaul/longhaul/internal/rtnl"
)

// Router reads and changes routes; the live one speaks rtnetlink in a
// namespace, tests use a fake that records what it was asked. Apply
// reads and changes a route's identity (family, dst, gateway, dev,
// table) and its initcwnd/initrwnd; the other fields are what the
// kernel reported and go into the journal as the prior state.
type Router interface {
	// Get returns the route to exactly dst in table (main when 0).
	Get(family, dst string, table int) (rtnl.Route, bool, error)
	// Cover returns the main-table route traffic to dst follows now.
	Cover(family, dst string) (rtnl.Route, bool, error)
	// Set makes the route r exist with r's metrics: the existing route to
	// r.Dst in r.Table is changed in place, else r is added.
	Set(r rtnl.Route) error
	// Delete removes the route to r.Dst in r.Table.
	Delete(r rtnl.Route) error
}

// ErrNotSupported is returned for live routes on systems without
// rtnetlink, and for the journal lock on systems without flock.
var ErrNotSupported = errors.New("apply: not supported on this system")

// journaled keeps what apply reads, changes and journals of a route: its
// identity and the two metrics. Journals (longhaul.journal/v1) are
// decoded with unknown fields refused, by older longhaul binaries too, so
// a route's other metrics and protocol stay out of them.
func journaled(r rtnl.Route) rtnl.Route {
	return rtnl.Route{Family: r.Family, Dst: r.Dst, Gateway: r.Gateway, Dev: r.Dev, Table: r.Table, InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd}
}
