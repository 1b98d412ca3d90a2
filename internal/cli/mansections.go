package cli

import (
	"fmt"
	"strings"

	"github.com/longhaul/longhaul/internal/apply"
)

// ManSection is a man page section the command tree does not carry: EXIT
// STATUS, FILES, ENVIRONMENT. Entries are a term (an exit status, a path,
// a variable) and what it means.
type ManSection struct {
	Title   string
	Entries [][2]string
}

// ManSections returns the extra sections of the man page of the command
// at path ("longhaul", "longhaul apply", ...), as the code behaves: the
// exit statuses are the constants ExitCode maps errors to.
func ManSections(path string) []ManSection {
	cmd := strings.TrimPrefix(strings.TrimPrefix(path, "longhaul"), " ")
	any := func(names ...string) bool {
		for _, n := range names {
			if cmd == "" || cmd == n {
				return true
			}
		}
		return false
	}
	var out []ManSection
	if e := exitEntries(cmd, any); len(e) > 0 {
		out = append(out, ManSection{"EXIT STATUS", e})
	}
	if f := fileEntries(any); len(f) > 0 {
		out = append(out, ManSection{"FILES", f})
	}
	return append(out, ManSection{"ENVIRONMENT", envEntries(any)})
}

func exitEntries(cmd string, any func(...string) bool) [][2]string {
	var e [][2]string
	if cmd == "emulate" {
		e = append(e, [2]string{"CMD's status", "emulate exits with the status of the command it ran, except as below."})
	}
	ok := "success."
	if any("serve", "exporter") && cmd != "" {
		ok = "success, and a clean stop on SIGINT or SIGTERM."
	}
	e = append(e,
		[2]string{fmt.Sprint(exitOK), ok},
		[2]string{fmt.Sprint(exitError), "the command could not do its work (a host that could not be read, a truncated capture, a failed run)."},
		[2]string{fmt.Sprint(exitUsage), "bad flags, values or input files: one line says what is accepted."})
	if any("audit") {
		e = append(e,
			[2]string{fmt.Sprint(exitFindings), "audit --fail-on: findings at or above that severity."},
			[2]string{fmt.Sprint(exitDrift), "audit --against: the host does not have the plan's values."})
	}
	if any("emulate") {
		e = append(e, [2]string{fmt.Sprint(exitInvalid), "emulate: the command succeeded but the emulator was overloaded: the run's results are not valid."})
	}
	return append(e, [2]string{"130, 143", "interrupted by SIGINT (Ctrl-C) or SIGTERM (128 + the signal's number); a second signal exits at once."})
}

func fileEntries(any func(...string) bool) [][2]string {
	var f [][2]string
	if any("apply", "rollback", "plan") {
		f = append(f, [2]string{apply.DefaultStateDir, "the journal of apply's transactions (below --root; --state-dir elsewhere), read by plan and rollback; reading it needs root."})
	}
	if any("apply", "rollback") {
		f = append(f,
			[2]string{apply.SysctlDropIn, "the sysctl settings apply --persist keeps across reboots."},
			[2]string{"/etc/systemd/network/NAME.network.d/90-longhaul.conf", "the route settings apply --persist keeps across reboots (systemd-networkd)."})
	}
	if any("audit", "plan", "apply") {
		f = append(f,
			[2]string{"/proc/sys/net", "the kernel's TCP settings read (below --root with --root)."},
			[2]string{"/etc/sysctl.d, /run/sysctl.d, /usr/local/lib/sysctl.d, /usr/lib/sysctl.d, /lib/sysctl.d, /etc/sysctl.conf", "the boot configuration read for settings that would undo a change."})
	}
	if any("emulate", "lab", "verify") {
		f = append(f,
			[2]string{"/run/longhaul", "the state of each emulated path, so that a killed run's namespaces are removed at the next start."},
			[2]string{"/run/netns", "the network namespaces of the emulated paths (ip netns)."})
	}
	if any("serve", "test") {
		f = append(f, [2]string{"--auth FILE", "the shared token: serve and test read it from this file (serve's packaged unit: /etc/longhaul/token)."})
	}
	return f
}

func envEntries(any func(...string) bool) [][2]string {
	e := [][2]string{{"PATH", "longhaul reads no variable of its own; PATH finds the programs it runs (ip; for lab and verify nginx, curl, iperf3, tcpdump, ping)."}}
	if any("lab", "verify") {
		e = append(e, [2]string{"TMPDIR", "where lab writes its web server's files (the large download file goes to /dev/shm when that is a tmpfs)."})
	}
	if any("emulate") {
		e = append(e, [2]string{"LONGHAUL_SERVER, LONGHAUL_CLIENT, LONGHAUL_SERVER_NETNS, LONGHAUL_CLIENT_NETNS", "set by emulate for its command and --server: the server's and client's addresses and network namespaces."},
			[2]string{"LONGHAUL_SERVER6, LONGHAUL_CLIENT6", "set by emulate --ipv6: the server's and client's IPv6 addresses."})
	}
	return e
}

// Roff renders the sections for a man page.
func (s ManSection) Roff() string {
	var b strings.Builder
	fmt.Fprintf(&b, ".SH %s\n", s.Title)
	for _, e := range s.Entries {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", roffEscape(e[0]), roffEscape(e[1]))
	}
	return b.String() + "\n\n"
}

func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
