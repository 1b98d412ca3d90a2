package plan

import (
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
)

// NamespaceSysctls returns the plan's sysctl values that a child network
// namespace can hold, by dotted key: what the lab sets in its client and
// server namespaces to run "the plan's settings" without touching the
// host. Host-scope items are left out: tcp_mem is global, and
// net.core.rmem_max/wmem_max are read-only in a child namespace (6.10+).
func NamespaceSysctls(p Plan) map[string]string {
	out := map[string]string{}
	for _, it := range p.Items {
		if it.Kind == KindSysctl && it.Scope == ScopeNetns {
			out[it.Key] = it.New
		}
	}
	return out
}

// FromSysctls makes a plan for a host described only by its kernel
// release and sysctl values (dotted keys, as in a lab profile such as old
// Ubuntu defaults), with memory unknown.
func FromSysctls(req Request, kernelRelease string, sysctls map[string]string) (Plan, error) {
	s := &snapshot.Snapshot{Source: "sysctl values", Sysctls: map[string]string{}, PageSize: 4096}
	for k, v := range sysctls {
		s.Sysctls[k] = v
	}
	if kernelRelease != "" {
		k, err := sysconf.ParseKernelRelease(kernelRelease)
		if err != nil {
			return Plan{}, inputErr("%v", err)
		}
		s.Kernel = k
	}
	return Make(s, req)
}
