//go:build !linux

package apply

func newNetlinkRouter(netns string) Router { return unsupportedRouter{} }

type unsupportedRouter struct{}

func (unsupportedRouter) Get(string, string, int) (RouteState, bool, error) {
	return RouteState{}, false, ErrNotSupported
}
func (unsupportedRouter) Cover(string, string) (RouteState, bool, error) {
	return RouteState{}, false, ErrNotSupported
}
func (unsupportedRouter) Set(RouteState) error    { return ErrNotSupported }
func (unsupportedRouter) Delete(RouteState) error { return ErrNotSupported }
