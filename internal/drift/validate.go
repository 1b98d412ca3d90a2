package drift

import (
	"net/netip"
	"strings"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// maxKernel bounds a plan's kernel release (uname -r is far shorter).
const maxKernel = 128

// Validate refuses, as bad input, a plan holding what no kernel has: a
// key apply would refuse (sysctl.CheckKey), a value not as the kernel
// writes one (sysctl.CheckValue), a route to no prefix, a kernel release
// that is not one. A report prints the plan's keys and values: a plan
// file is the user's input, and a 100 KB key, escape codes or a key with
// a newline (that forged an "OK" line on standard output) were printed
// raw. The error quotes what it refuses, cut short.
func Validate(p plan.Plan) error {
	if len(p.Kernel) > maxKernel || strings.ContainsFunc(p.Kernel, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return badinput.Errorf("the plan's kernel release %s is not one", sysctl.Quote(p.Kernel))
	}
	for i, it := range p.Items {
		switch it.Kind {
		case plan.KindSysctl:
			if _, err := sysctl.CheckKey(it.Key); err != nil {
				return badinput.Errorf("plan item %d: %w", i+1, err)
			}
			if err := sysctl.CheckValue(it.New); err != nil {
				return badinput.Errorf("plan item %d (%s): %w", i+1, it.Key, err)
			}
		case plan.KindRoute:
			if r := it.Route; r != nil && !validRoute(*r) {
				return badinput.Errorf("plan item %d: route to %s (family %s) is not a route to a prefix or default", i+1, sysctl.Quote(r.Dst), sysctl.Quote(r.Family))
			}
		}
	}
	return nil
}

func validRoute(r plan.Route) bool {
	if r.Family != "inet" && r.Family != "inet6" {
		return false
	}
	if r.Dst == "default" {
		return true
	}
	if _, err := netip.ParsePrefix(r.Dst); err == nil {
		return true
	}
	_, err := netip.ParseAddr(r.Dst)
	return err == nil
}
