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
// rtnetlink.
var ErrNotSupported = errors.New("apply: routes are not supported on this system")
