// Package emit renders a plan (internal/plan's Plan, schema
// longhaul.plan/v1) in the forms fleets apply: a sysctl.d file, a
// systemd-networkd drop-in, NetworkManager commands, an Ansible playbook,
// a tuned profile, Kubernetes objects (a node DaemonSet and a pod
// securityContext patch) and nmstate state. It is pure: a Plan in, text
// out.
//
// # Rules every format keeps
//
//   - The values are the plan's, whitespace normalized to single spaces
//     (sysctl.Normalize), the way apply --persist writes them: the kernel
//     prints multi-value keys such as tcp_rmem with tabs, so a tool that
//     compares text would otherwise see a change on every run. Formats
//     that compare (the Ansible playbook) normalize the running value
//     too, so applying twice reports no change the second time.
//   - The sysctl.d lines and networkd [Route] sections are apply's own
//     (apply.SysctlLine, apply.NetworkdRoute, apply.NMCommand): one
//     renderer, whichever way the plan reaches the host.
//   - Keys carry their scope: per network namespace (tcp_rmem, ...) or
//     host-wide (net.core.*, tcp_mem). Formats that can only reach one
//     scope (a pod's securityContext) leave the others out and say so in
//     a comment.
package emit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// Format is one output form.
type Format struct {
	Name string
	// Desc says what the output is and how it is applied.
	Desc   string
	render func(p plan.Plan) (string, error)
}

// formats in the order --help lists them.
var formats = []Format{
	{"sysctl.d", "sysctl.d(5) file: install as " + apply.SysctlDropIn + ", then sysctl -p it", sysctlD},
	{"networkd", "systemd-networkd [Route] drop-in for the .network file of the route's interface", networkd},
	{"nm", "shell commands (nmcli) that add the planned routes to NetworkManager's connection", nm},
	{"ansible", "Ansible playbook (ansible.builtin only: runs with ansible-core)", ansible},
	{"tuned", "tuned profile: /etc/tuned/longhaul/tuned.conf, then tuned-adm profile <current> longhaul", tuned},
	{"k8s", "Kubernetes DaemonSet setting the node's sysctls (host network namespace)", k8sDaemonSet},
	{"k8s-pod", "Kubernetes strategic-merge patch: a pod's securityContext.sysctls (tcp_rmem/tcp_wmem, safe since 1.32)", k8sPod},
	{"nmstate", "nmstate desired state (nmstatectl apply) for the planned routes", nmstate},
}

// Formats returns every format in a stable order.
func Formats() []Format { return append([]Format(nil), formats...) }

// Names returns the format names, comma separated, for help and errors.
func Names() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Render returns the plan in the named format.
func Render(p plan.Plan, name string) ([]byte, error) {
	if p.Schema != plan.Schema {
		return nil, badinput.Errorf("not a longhaul plan: schema %q, want %s", p.Schema, plan.Schema)
	}
	for _, f := range formats {
		if f.Name == name {
			// Every field a format writes is checked first (the formats
			// quote as well, YAML, INI and shell, as a second line of
			// defence).
			if err := plan.CheckFields(p); err != nil {
				return nil, fmt.Errorf("%w: refusing to write it into a file another tool reads (was the plan or the snapshot it came from edited?)", err)
			}
			s, err := f.render(p)
			return []byte(s), err
		}
	}
	return nil, badinput.Errorf("unknown format %q: want one of %s", name, Names())
}

// Setting is one planned sysctl, its value normalized.
type Setting struct {
	Key, Value, Current string
	// Host is true for host-wide keys (net.core.*, tcp_mem): a child
	// network namespace cannot set them.
	Host bool
}

// Sysctls returns the plan's sysctl items in plan order.
func Sysctls(p plan.Plan) []Setting {
	var out []Setting
	for _, it := range p.Items {
		if it.Kind != plan.KindSysctl {
			continue
		}
		out = append(out, Setting{
			Key: it.Key, Value: sysctl.Normalize(it.New), Current: sysctl.Normalize(it.Current),
			Host: it.Scope == plan.ScopeHost,
		})
	}
	return out
}

// route is a planned route with what persisting it needs.
type route struct {
	rtnl.Route
	DHCP, Exists bool
}

func routes(p plan.Plan) []route {
	var out []route
	for _, it := range p.Items {
		if it.Kind != plan.KindRoute || it.Route == nil {
			continue
		}
		r := it.Route
		out = append(out, route{
			Route: rtnl.Route{Family: r.Family, Dst: r.Dst, Gateway: r.Gateway, Dev: r.Dev, Table: r.Table, InitCwnd: r.InitCwnd, InitRwnd: r.InitRwnd},
			DHCP:  r.DHCP, Exists: r.Exists,
		})
	}
	return out
}

// header is the comment every format starts with (prefix: "# ").
func header(p plan.Plan, format, install string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# longhaul plan --emit %s: %s\n", format, apply.Summary(p))
	host := p.Host
	if host == "" {
		host = "-"
	}
	fmt.Fprintf(&b, "# Made on host %s (Linux %s); values are the plan's, written so re-applying changes nothing.\n", host, orDash(p.Kernel))
	if install != "" {
		fmt.Fprintf(&b, "# %s\n", install)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// keyList is the keys of ss, comma separated, sorted.
func keyList(ss []Setting) string {
	keys := make([]string, len(ss))
	for i, s := range ss {
		keys[i] = s.Key
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// dstPrefix is a route destination as a prefix ("default" -> 0.0.0.0/0).
func dstPrefix(r rtnl.Route) string {
	if r.Dst != "default" {
		return r.Dst
	}
	if r.Family == "inet6" {
		return "::/0"
	}
	return "0.0.0.0/0"
}
