package apply

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

const (
	// SysctlDropIn is the boot configuration apply --persist writes.
	// systemd-sysctl and `sysctl --system` apply sysctl.d files in
	// lexical order of their names, /etc/sysctl.conf last: 90- comes after
	// distribution files (10- to 60-) and before 99-sysctl.conf, which
	// conflict detection reports.
	SysctlDropIn = "/etc/sysctl.d/90-longhaul.conf"
	// dropInName is the name of the networkd drop-in in NAME.network.d/.
	dropInName = "90-longhaul.conf"
	// headerMark starts every file apply writes; a file without it is not
	// overwritten.
	headerMark = "# Written by longhaul apply"
)

// networkDirs are systemd-networkd's .network directories in order of
// precedence (systemd.network(5)).
var networkDirs = []string{"/etc/systemd/network", "/run/systemd/network", "/usr/local/lib/systemd/network", "/usr/lib/systemd/network"}

func header(id, summary, what string) string {
	return fmt.Sprintf("%s; last change: transaction %s\n# (%s).\n# longhaul rollback %s restores this file as it was before that transaction.\n# %s\n",
		headerMark, id, summary, id, what)
}

// ours reports whether existing content was written by apply.
func ours(b []byte) bool { return len(b) == 0 || bytes.HasPrefix(b, []byte(headerMark)) }

// sysctlEntry is one assignment of the drop-in with its comment.
type sysctlEntry struct{ comment, key, value string }

// renderSysctlDropIn merges set (in order) into the existing drop-in:
// keys set before and not in set keep their lines.
func renderSysctlDropIn(existing []byte, id, summary string, set []sysctlEntry) ([]byte, error) {
	if !ours(existing) {
		return nil, fmt.Errorf("%s exists and was not written by longhaul: refusing to overwrite it", SysctlDropIn)
	}
	var entries []sysctlEntry
	lines := strings.Split(string(existing), "\n")
	as, _ := sysconf.ParseSysctlFile(SysctlDropIn, bytes.NewReader(existing))
	for _, a := range as {
		e := sysctlEntry{key: a.Key, value: a.Value}
		if a.Line >= 2 && strings.HasPrefix(lines[a.Line-2], "# ") && !strings.HasPrefix(lines[a.Line-2], headerMark) {
			e.comment = lines[a.Line-2]
		}
		entries = append(entries, e)
	}
	for _, s := range set {
		replaced := false
		for i := range entries {
			if entries[i].key == s.key {
				replaced = true
				if sysctl.Normalize(entries[i].value) != s.value {
					entries[i] = s
				}
			}
		}
		if !replaced {
			entries = append(entries, s)
		}
	}
	var b strings.Builder
	b.WriteString(header(id, summary, "systemd-sysctl applies it at boot; sysctl -p "+SysctlDropIn+" applies it now."))
	for _, e := range entries {
		b.WriteString("\n")
		if e.comment != "" {
			b.WriteString(e.comment + "\n")
		}
		b.WriteString(SysctlLine(e.key, e.value))
	}
	return []byte(b.String()), nil
}

// SysctlLine is one sysctl.d(5) assignment the way apply --persist
// writes it: "key = value" with the value's whitespace normalized to
// single spaces, so that a multi-value key (tcp_rmem, which the kernel
// prints with tabs) compares equal to what is written however often it
// is applied. plan --emit writes the same lines.
func SysctlLine(key, value string) string {
	return fmt.Sprintf("%s = %s\n", key, sysctl.Normalize(value))
}

// NetworkdRoute is the systemd.network(5) [Route] section apply
// --persist writes for r (dhcp: the gateway is learned by DHCP).
func NetworkdRoute(r rtnl.Route, dhcp bool) string { return routeBlock(r, dhcp) }

// networkFile returns the .network file (path within root) that
// systemd-networkd applies to dev: the first, in lexical order of file
// names, whose [Match] Name= matches it; a file in an earlier directory
// masks one of the same name in a later one. "" when none does.
func networkFile(root, dev string) (string, error) {
	seen := map[string]bool{}
	var files []string
	for _, dir := range networkDirs {
		entries, err := os.ReadDir(hostPath(root, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", dir, bare(err))
		}
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, ".network") || seen[n] {
				continue
			}
			seen[n] = true
			files = append(files, path.Join(dir, n))
		}
	}
	sort.Slice(files, func(i, j int) bool { return path.Base(files[i]) < path.Base(files[j]) })
	for _, f := range files {
		data, err := os.ReadFile(hostPath(root, f))
		if err != nil {
			continue // masked (/dev/null) or unreadable: networkd skips it too
		}
		if matchesName(data, dev) {
			return f, nil
		}
	}
	return "", nil
}

// matchesName reports whether a .network file's [Match] section selects
// an interface named dev. Only Name= is evaluated: a file that matches
// on other properties alone is not taken to be dev's.
func matchesName(data []byte, dev string) bool {
	section := ""
	var names []string
	other := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		if strings.HasPrefix(l, "[") {
			section = l
			continue
		}
		if section != "[Match]" {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		switch strings.TrimSpace(k) {
		case "Name":
			if strings.TrimSpace(v) == "" {
				names = nil // an empty assignment resets the list
				continue
			}
			names = append(names, strings.Fields(v)...)
		default:
			other = true
		}
	}
	if len(names) == 0 {
		return !other // an empty [Match] applies to every link
	}
	invert := strings.HasPrefix(names[0], "!")
	if invert {
		names[0] = strings.TrimPrefix(names[0], "!")
	}
	match := false
	for _, n := range names {
		if ok, _ := path.Match(n, dev); ok {
			match = true
		}
	}
	return match != invert
}

// networkdDropIn is where apply writes routes for a .network file.
func networkdDropIn(networkFile string) string {
	return path.Join("/etc/systemd/network", path.Base(networkFile)+".d", dropInName)
}

// routeBlock renders one [Route] section.
func routeBlock(r rtnl.Route, dhcp bool) string {
	var b strings.Builder
	b.WriteString("[Route]\n")
	if r.Dst != "default" {
		fmt.Fprintf(&b, "Destination=%s\n", r.Dst)
	}
	switch {
	case dhcp && r.Family == "inet6":
		b.WriteString("Gateway=_ipv6ra\n")
	case dhcp:
		b.WriteString("Gateway=_dhcp4\n")
	case r.Gateway != "":
		fmt.Fprintf(&b, "Gateway=%s\n", r.Gateway)
	}
	if r.Table != 0 && r.Table != 254 {
		fmt.Fprintf(&b, "Table=%d\n", r.Table)
	}
	if r.InitCwnd > 0 {
		fmt.Fprintf(&b, "InitialCongestionWindow=%d\n", r.InitCwnd)
	}
	if r.InitRwnd > 0 {
		fmt.Fprintf(&b, "InitialAdvertisedReceiveWindow=%d\n", r.InitRwnd)
	}
	return b.String()
}

// routeBlocks splits a drop-in into its [Route] sections keyed by
// destination ("default" without Destination=).
func routeBlocks(data []byte) (keys []string, blocks map[string]string) {
	blocks = map[string]string{}
	var cur strings.Builder
	key, in := "", false
	flush := func() {
		if in {
			if _, dup := blocks[key]; !dup {
				keys = append(keys, key)
			}
			blocks[key] = cur.String()
		}
		cur.Reset()
	}
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			flush()
			in, key = t == "[Route]", "default"
		}
		if !in || t == "" {
			continue
		}
		if v, ok := strings.CutPrefix(t, "Destination="); ok {
			key = strings.TrimSpace(v)
		}
		cur.WriteString(l + "\n")
	}
	flush()
	return keys, blocks
}

// renderNetworkdDropIn merges routes into an existing drop-in, one
// [Route] section per destination.
func renderNetworkdDropIn(existing []byte, file, id, summary string, set []rtnl.Route, dhcp map[string]bool) ([]byte, error) {
	if !ours(existing) {
		return nil, fmt.Errorf("%s exists and was not written by longhaul: refusing to overwrite it", file)
	}
	keys, blocks := routeBlocks(existing)
	for _, r := range set {
		if _, ok := blocks[r.Dst]; !ok {
			keys = append(keys, r.Dst)
		}
		blocks[r.Dst] = routeBlock(r, dhcp[r.Dst]) // rendered the same way each time: equal when unchanged
	}
	var b strings.Builder
	b.WriteString(header(id, summary, "systemd-networkd applies it on networkctl reload and at boot."))
	for _, k := range keys {
		b.WriteString("\n" + blocks[k])
	}
	return []byte(b.String()), nil
}

// nmHint is the NetworkManager command that persists a route's metrics.
func nmHint(r rtnl.Route) string {
	return fmt.Sprintf("NetworkManager manages %s: persist the route with %s", r.Dev, NMCommand(r))
}

// NMCommand is the nmcli command line that adds r with its metrics to
// the connection NetworkManager has on r.Dev and reapplies it.
func NMCommand(r rtnl.Route) string {
	fam := "ipv4"
	if r.Family == "inet6" {
		fam = "ipv6"
	}
	dst := r.Dst
	if dst == "default" {
		dst = "0.0.0.0/0"
		if r.Family == "inet6" {
			dst = "::/0"
		}
	}
	attrs := []string{dst}
	if r.Gateway != "" {
		attrs = append(attrs, r.Gateway)
	}
	if r.InitCwnd > 0 {
		attrs = append(attrs, fmt.Sprintf("initcwnd=%d", r.InitCwnd))
	}
	if r.InitRwnd > 0 {
		attrs = append(attrs, fmt.Sprintf("initrwnd=%d", r.InitRwnd))
	}
	// Quoted for the shell: the device and addresses may come from a plan
	// file (emit checks them too).
	dev := shellWord(r.Dev)
	return fmt.Sprintf(`nmcli connection modify "$(nmcli -g GENERAL.CONNECTION device show %s)" +%s.routes %s && nmcli device reapply %s`,
		dev, fam, shellWord(strings.Join(attrs, " ")), dev)
}

// shellWord is s as one word of a POSIX shell command: as it is when it
// holds only characters no shell treats specially, else single-quoted.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sysctlConflicts compares the keys apply sets (key -> value) with the
// boot configuration. With persist, assignments applied after the
// drop-in win at boot (conflicts); without, the configured value comes
// back at the next boot (notes).
func sysctlConflicts(cfg *sysconf.Config, set map[string]string, persist bool) (conflicts, notes []string) {
	if cfg == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ourBase := path.Base(SysctlDropIn)
	for _, k := range keys {
		want := sysctl.Normalize(set[k])
		var last *sysconf.Assignment
		for i, a := range cfg.Assignments {
			if a.File == SysctlDropIn || !keyMatches(a, k) {
				continue
			}
			last = &cfg.Assignments[i]
			if !persist || sysctl.Normalize(a.Value) == want {
				continue
			}
			where := fmt.Sprintf("%s:%d", a.File, a.Line)
			if a.File == "/etc/sysctl.conf" || path.Base(a.File) > ourBase {
				conflicts = append(conflicts, fmt.Sprintf("%s: %s sets %s and is applied after %s, so it wins at boot: remove that line", k, where, a.Value, SysctlDropIn))
			} else {
				notes = append(notes, fmt.Sprintf("%s: %s sets %s; %s overrides it at boot (delete that line to keep one source)", k, where, a.Value, SysctlDropIn))
			}
		}
		if !persist && last != nil && sysctl.Normalize(last.Value) != want {
			notes = append(notes, fmt.Sprintf("%s: runtime only: at the next boot %s:%d sets %s again (use --persist)", k, last.File, last.Line, last.Value))
		}
	}
	return conflicts, notes
}

func keyMatches(a sysconf.Assignment, key string) bool {
	if a.Key == key {
		return true
	}
	if a.Glob {
		ok, _ := path.Match(strings.ReplaceAll(a.Key, ".", "/"), strings.ReplaceAll(key, ".", "/"))
		return ok
	}
	return false
}

// daemonConflicts reports tuning daemons that rewrite sysctls.
func daemonConflicts(ds []sysconf.Process) []string {
	var out []string
	for _, d := range ds {
		switch d.Name {
		case "tuned":
			out = append(out, fmt.Sprintf("tuned is running (pid %d): its active profile may set these sysctls back when it (re)applies (tuned #409): put the values in the profile or disable its sysctl plugin", d.PID))
		case "bpftune":
			out = append(out, fmt.Sprintf("bpftune is running (pid %d): it rewrites tcp_rmem/tcp_wmem at run time and may undo or fight these values: stop it or exclude its TCP buffer tuner", d.PID))
		}
	}
	return out
}
