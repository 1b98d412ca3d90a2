package emit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
)

// ansible is a playbook that needs only ansible-core's builtin modules:
// Debian 12's ansible-core 2.14 has no ansible.posix collection (it ships
// with the full `ansible` package), so the sysctls are read from
// /proc/sys, compared with whitespace collapsed (the kernel prints
// tcp_rmem with tabs) and written with sysctl -w only when they differ;
// the sysctl.d file is written with ansible.builtin.copy, whose content
// is apply's. Routes are changed with ip route replace on the route the
// host has (or follows) with the planned metrics added.
func ansible(p plan.Plan) (string, error) {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString(header(p, "ansible", "ansible-playbook -i HOSTS playbook.yml [-e longhaul_persist=false] [-e '{\"longhaul_scopes\": [\"netns\"]}']"))
	b.WriteString("# Needs only ansible-core (ansible.builtin): values are compared with whitespace collapsed,\n")
	b.WriteString("# so a second run reports no change. longhaul_scopes: netns keys (tcp_rmem, ...) and/or host-wide\n")
	b.WriteString("# keys (net.core.*, tcp_mem; a network namespace cannot set these).\n")
	if n := len(routes(p)); n > 0 {
		fmt.Fprintf(&b, "# %d route(s) are changed at run time (ip route replace): persist them with --emit networkd, nm or nmstate.\n", n)
	}
	// !unsafe: Ansible templates a play's name, even for --syntax-check;
	// what a plan says is data, never a Jinja expression.
	fmt.Fprintf(&b, "- name: !unsafe %s\n", strconv.Quote("longhaul plan: "+apply.Summary(p)))
	b.WriteString("  hosts: all\n  become: true\n  gather_facts: false\n  vars:\n")
	b.WriteString("    longhaul_persist: true\n    longhaul_scopes: [netns, host]\n")
	fmt.Fprintf(&b, "    longhaul_sysctl_file: %s\n", apply.SysctlDropIn)
	ss := Sysctls(p)
	b.WriteString("    longhaul_sysctls:")
	if len(ss) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, s := range ss {
		scope := "netns"
		if s.Host {
			scope = "host"
		}
		fmt.Fprintf(&b, "      - {key: !unsafe %s, value: !unsafe %s, scope: %s}\n", strconv.Quote(s.Key), strconv.Quote(s.Value), scope)
	}
	b.WriteString("  tasks:\n")
	if len(ss) > 0 {
		b.WriteString(ansibleSysctlTasks(sysctlDBody(ss)))
	}
	for _, r := range routes(p) {
		b.WriteString(ansibleRouteTasks(r.Route))
	}
	if len(ss) == 0 && len(routes(p)) == 0 {
		b.WriteString("    - name: the plan changes nothing\n      ansible.builtin.debug:\n        msg: nothing to change\n")
	}
	return b.String(), nil
}

// sysctlDBody is the sysctl.d file the playbook persists.
func sysctlDBody(ss []Setting) string {
	var b strings.Builder
	b.WriteString("# Written by longhaul plan --emit ansible; systemd-sysctl applies it at boot.\n")
	for _, s := range ss {
		b.WriteString(apply.SysctlLine(s.Key, s.Value))
	}
	return b.String()
}

func ansibleSysctlTasks(persist string) string {
	var b strings.Builder
	b.WriteString(`    - name: read the running sysctls
      ansible.builtin.slurp:
        src: "/proc/sys/{{ item.key | replace('.', '/') }}"
      loop: "{{ longhaul_sysctls | selectattr('scope', 'in', longhaul_scopes) | list }}"
      loop_control: {label: "{{ item.key }}"}
      register: longhaul_running
    - name: set the sysctls that differ (whitespace collapsed, as the kernel prints tabs)
      ansible.builtin.command:
        argv: [sysctl, -w, "{{ item.item.key }}={{ item.item.value }}"]
      loop: "{{ longhaul_running.results }}"
      loop_control: {label: "{{ item.item.key }}"}
      when: (item.content | b64decode).split() | join(' ') != item.item.value
    - name: persist them in sysctl.d
      ansible.builtin.copy:
        dest: "{{ longhaul_sysctl_file }}"
        mode: "0644"
        content: |
`)
	for _, l := range strings.SplitAfter(persist, "\n") {
		if l != "" {
			b.WriteString("          " + l)
		}
	}
	b.WriteString("      when: longhaul_persist | bool\n")
	return b.String()
}

// ansibleRouteTasks changes the route to r.Dst in place: the route the
// host has now (ip -o route show exact) or, when it has none, the one
// traffic to r.Dst follows (ip -o route get), replaced with the planned
// initcwnd/initrwnd. The gateway and interface are the host's own, not
// the planning host's.
func ansibleRouteTasks(r rtnl.Route) string {
	fam := "-4"
	if r.Family == "inet6" {
		fam = "-6"
	}
	addr := strings.SplitN(dstPrefix(r), "/", 2)[0]
	var metrics []string
	if r.InitCwnd > 0 {
		metrics = append(metrics, "initcwnd", strconv.Itoa(r.InitCwnd))
	}
	if r.InitRwnd > 0 {
		metrics = append(metrics, "initrwnd", strconv.Itoa(r.InitRwnd))
	}
	want := strings.Join(metrics, " ")
	// The metric is missing or has another value: ip prints metrics in
	// RTAX order with others (rto_min) possibly between them.
	differs := ""
	for i := 0; i < len(metrics); i += 2 {
		differs += fmt.Sprintf(" or\n        (' ' ~ longhaul_now ~ ' ') is not search(' %s %s ')", metrics[i], metrics[i+1])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `    - name: read the route to %[1]s
      ansible.builtin.command:
        argv: [ip, %[2]s, -o, route, show, exact, %[1]s]
      register: longhaul_route
      changed_when: false
    - name: read the route traffic to %[1]s follows
      ansible.builtin.command:
        argv: [ip, %[2]s, -o, route, get, %[3]s]
      register: longhaul_cover
      changed_when: false
      when: longhaul_route.stdout_lines | length == 0
    - name: set initial windows on the route to %[1]s (%[4]s)
      vars:
        longhaul_now: "{{ longhaul_route.stdout_lines[0] if longhaul_route.stdout_lines else '' }}"
        longhaul_via: "{{ longhaul_cover.stdout | default('') | regex_search('via \\S+') or '' }}"
        longhaul_dev: "{{ longhaul_cover.stdout | default('') | regex_search('dev \\S+') or '' }}"
        longhaul_base: "{{ longhaul_now | regex_replace(' (initcwnd|initrwnd) \\d+', '') if longhaul_now else '%[1]s ' ~ longhaul_via ~ ' ' ~ longhaul_dev }}"
      ansible.builtin.command:
        argv: "{{ ['ip', '%[2]s', 'route', 'replace'] + longhaul_base.split() + %[5]s }}"
      when: >-
        longhaul_route.stdout_lines | length == 0%[6]s
`, r.Dst, fam, addr, want, pyList(metrics), differs)
	return b.String()
}

// pyList is a Jinja list literal of strings.
func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
