package plan

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
