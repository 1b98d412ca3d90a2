//go:build !linux

package apply

import "github.com/longhaul/longhaul/internal/rtnl"

func newNetlinkRouter(netns string) Router { return unsupportedRouter{} }

type unsupportedRouter struct{}

func (unsupportedRouter) Get(string, string, int) (rtnl.Route, bool, error) {
	return rtnl.Route{}, false, ErrNotSupported
}
func (unsupportedRouter) Cover(string, string) (rtnl.Route, bool, error) {
	return rtnl.Route{}, false, ErrNotSupported
}
func (unsupportedRouter) Set(rtnl.Route) error    { return ErrNotSupported }
func (unsupportedRouter) Delete(rtnl.Route) error { return ErrNotSupported }
