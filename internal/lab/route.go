//go:build linux

package lab

import (
	"fmt"
	"net/netip"

	"github.com/longhaul/longhaul/internal/rtnl"
)

// routeWindows sets and reads back the route's initcwnd/initrwnd (0 is
// the kernel default) and checks the kernel kept what was set.
func routeWindows(ns string, peer netip.Addr, cwnd, rwnd int) (int, int, error) {
	c, w, err := setRouteWindows(ns, peer, cwnd, rwnd)
	if err != nil {
		return 0, 0, err
	}
	if (cwnd > 0 && c != cwnd) || (rwnd > 0 && w != rwnd) {
		return 0, 0, fmt.Errorf("route initcwnd/initrwnd read back as %d/%d, set %d/%d", c, w, cwnd, rwnd)
	}
	return c, w, nil
}

// setRouteWindows sets initcwnd and initrwnd (segments; 0 leaves the
// kernel default) on the route to peer inside namespace ns, like
// `ip route change PEER dev lh0 initcwnd N initrwnd M`, and returns the
// values read back.
func setRouteWindows(ns string, peer netip.Addr, cwnd, rwnd int) (gotCwnd, gotRwnd int, err error) {
	family := "inet"
	if peer.Is6() {
		family = "inet6"
	}
	dst := netip.PrefixFrom(peer, peer.BitLen()).String()
	router := rtnl.NewRouter(ns)
	r, ok, err := router.Get(family, dst, 0)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("no route to %v in namespace %s", peer, ns)
	}
	if cwnd > 0 || rwnd > 0 {
		r.InitCwnd, r.InitRwnd = cwnd, rwnd
		if err := router.Set(r); err != nil {
			return 0, 0, fmt.Errorf("set initcwnd %d initrwnd %d on the route to %v: %w", cwnd, rwnd, peer, err)
		}
	}
	if r, ok, err = router.Get(family, dst, 0); err != nil || !ok {
		return 0, 0, fmt.Errorf("the route to %v vanished (%v)", peer, err)
	}
	return r.InitCwnd, r.InitRwnd, nil
}
