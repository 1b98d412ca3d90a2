package apply

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// valueKind is the shape of a sysctl's value.
type valueKind int

const (
	kindTriple valueKind = iota // min default max bytes
	kindTCPMem                  // min pressure max pages
	kindInt                     // one integer in [min, max]
	kindBool                    // 0 or 1
)

type rule struct {
	kind     valueKind
	min, max int64
}

// rules lists the keys a plan may set and what values the kernel would
// take for them (net/ipv4/sysctl_net_ipv4.c, net/core/sysctl_net_core.c
// bounds: SOCK_MIN_RCVBUF/SNDBUF below, INT_MAX above).
var rules = map[string]rule{
	"net.ipv4.tcp_rmem":                  {kind: kindTriple},
	"net.ipv4.tcp_wmem":                  {kind: kindTriple},
	"net.ipv4.tcp_mem":                   {kind: kindTCPMem},
	"net.core.rmem_max":                  {kind: kindInt, min: 2304, max: pathmodel.MaxBuffer},
	"net.core.wmem_max":                  {kind: kindInt, min: 4608, max: pathmodel.MaxBuffer},
	"net.ipv4.tcp_slow_start_after_idle": {kind: kindBool},
	"net.ipv4.tcp_no_metrics_save":       {kind: kindBool},
	"net.ipv4.tcp_window_scaling":        {kind: kindBool},
	"net.ipv4.tcp_moderate_rcvbuf":       {kind: kindBool},
	"net.ipv4.tcp_mtu_probing":           {kind: kindInt, min: 0, max: 2},
}

// hostScoped keys are global (tcp_mem) or read-only in a child namespace
// (net.core.*), whatever the plan says.
func hostScoped(key string) bool {
	return key == "net.ipv4.tcp_mem" || strings.HasPrefix(key, "net.core.")
}

// checkValue checks a value as the kernel would take it.
func checkValue(key, v string, memTotal, pageSize int64) error {
	r, ok := rules[key]
	if !ok {
		return errors.New("longhaul plans never set this key")
	}
	switch r.kind {
	case kindTriple:
		if _, err := sysctl.ParseTriple(v); err != nil {
			return err
		}
	case kindTCPMem:
		n, err := sysctl.ParseInts(v, 3)
		if err != nil {
			return err
		}
		switch {
		case n[0] <= 0 || n[1] <= 0 || n[2] <= 0:
			return errors.New("tcp_mem values must be positive page counts")
		case n[0] > n[1] || n[1] > n[2]:
			return errors.New("tcp_mem must be ordered min <= pressure <= max")
		case memTotal > 0 && n[2]*pageSize > memTotal:
			return fmt.Errorf("a tcp_mem max of %s is more than the host's RAM (%s)", units.FormatIEC(float64(n[2]*pageSize)), units.FormatIEC(float64(memTotal)))
		}
	case kindInt:
		n, err := sysctl.ParseInt(v)
		if err != nil {
			return err
		}
		if n < r.min || n > r.max {
			return fmt.Errorf("out of range %d..%d", r.min, r.max)
		}
	case kindBool:
		if v := strings.TrimSpace(v); v != "0" && v != "1" {
			return errors.New("want 0 or 1")
		}
	}
	return nil
}

// build judges the plan against the host and returns the journal of the
// changes to make. It refuses, with one line and before anything is
// written, whatever the kernel would reject or the plan no longer fits.
func build(p plan.Plan, e *env, o Options) (*Journal, *Report, error) {
	if err := checkTarget(p, e, o); err != nil {
		return nil, nil, err
	}
	b := &journalBuilder{
		e: e, o: o,
		j: &Journal{
			Schema: JournalSchema, Created: o.Now().UTC(), Root: o.Root, Netns: o.Netns, Kernel: e.kernel,
			PlanDigest: Digest(p), Summary: Summary(p), Persist: o.Persist,
			Sysctls: []SysctlStep{}, Routes: []RouteStep{}, Files: []FileStep{},
		},
		rep:     &Report{Changes: []Change{}},
		seen:    map[string]bool{},
		set:     map[string]string{},
		dropIns: map[string][]rtnl.Route{},
		dhcp:    map[string]map[string]bool{},
	}
	for i, it := range p.Items {
		var err error
		switch it.Kind {
		case plan.KindSysctl:
			err = b.sysctl(i, it)
		case plan.KindRoute:
			err = b.route(i, it)
		case plan.KindApp:
			b.rep.Apps = append(b.rep.Apps, it)
		default:
			err = refuse("plan item %d (%s): unknown kind %s", i+1, sysctl.Quote(it.Key), sysctl.Quote(string(it.Kind)))
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if err := b.files(); err != nil {
		return nil, nil, err
	}
	rep := b.rep
	if o.Netns == "" {
		c, n := sysctlConflicts(e.config, b.set, o.Persist)
		rep.Conflicts = append(rep.Conflicts, c...)
		rep.Notes = append(rep.Notes, n...)
		rep.Conflicts = append(rep.Conflicts, daemonConflicts(e.daemons)...)
		if e.configUnreadable != "" {
			rep.note("boot configuration not checked for conflicts: %s", e.configUnreadable)
		}
	}
	sort.SliceStable(rep.Changes, func(a, b int) bool { return kindRank(rep.Changes[a].Kind) < kindRank(rep.Changes[b].Kind) })
	return b.j, rep, nil
}

// checkTarget refuses a plan that is not one, or was made for another
// kernel or namespace.
func checkTarget(p plan.Plan, e *env, o Options) error {
	switch {
	case p.Schema != plan.Schema:
		return refuse("not a longhaul plan: schema %s, want %s (write one with longhaul plan --json)", sysctl.Quote(p.Schema), plan.Schema)
	case p.Kernel == "":
		return refuse("the plan does not say which kernel it was made for: make it again with longhaul plan")
	case p.Kernel != e.kernel:
		return refuse("the plan was made for Linux %s but this host runs %s: make the plan again here", p.Kernel, e.kernel)
	case p.Netns != o.Netns && p.Netns != "":
		return refuse("the plan was made for network namespace %s: apply it with --netns %s", p.Netns, p.Netns)
	case p.Netns != o.Netns:
		return refuse("the plan was made for the host's namespace, not for netns %s: make it with longhaul plan --netns %s", o.Netns, o.Netns)
	}
	return nil
}

// journalBuilder is build's state while it walks the plan's items: the
// journal and report so far and what the files apply writes will hold.
type journalBuilder struct {
	e   *env
	o   Options
	j   *Journal
	rep *Report
	// seen holds the sysctl keys and route ids already planned.
	seen map[string]bool
	// set holds the sysctls the host ends up with, for conflicts.
	set            map[string]string
	persistSysctls []sysctlEntry
	// dropIns holds the routes per networkd drop-in, in dropInOrder, and
	// dhcp which of their destinations have a DHCP gateway.
	dropIns     map[string][]rtnl.Route
	dhcp        map[string]map[string]bool
	dropInOrder []string
}

// sysctl judges plan item i, a sysctl.
func (b *journalBuilder) sysctl(i int, it plan.Item) error {
	o, rep := b.o, b.rep
	key, err := sysctl.CheckKey(it.Key)
	if err != nil {
		return refuse("plan item %d: %v", i+1, err)
	}
	if b.seen[key] {
		return refuse("%s appears twice in the plan", key)
	}
	b.seen[key] = true
	if o.Netns != "" && hostScoped(key) {
		rep.Changes = append(rep.Changes, Change{Kind: "sysctl", Key: key, Before: it.Current, After: it.New, Status: "skipped",
			Note: "host-wide, not per network namespace: apply it on the host"})
		return nil
	}
	now := b.e.sysctls[key]
	if !now.exists {
		return refuse("%s: no such key on this kernel (Linux %s): refusing the plan", key, b.e.kernel)
	}
	if err := checkValue(key, it.New, b.e.memTotal, b.e.pageSize); err != nil {
		return refuse("%s = %s: %v", key, sysctl.Quote(it.New), err)
	}
	if !now.writable {
		where := "here"
		if o.Netns != "" {
			where = "inside network namespace " + o.Netns
		}
		return refuse("%s is read-only %s", key, where)
	}
	cur, want := sysctl.Normalize(now.raw), sysctl.Normalize(it.New)
	switch cur {
	case want:
		rep.Changes = append(rep.Changes, Change{Kind: "sysctl", Key: key, Before: cur, After: want, Status: "unchanged"})
	case sysctl.Normalize(it.Current):
		b.j.Sysctls = append(b.j.Sysctls, SysctlStep{Key: key, Before: now.raw, After: want})
		rep.Changes = append(rep.Changes, Change{Kind: "sysctl", Key: key, Before: cur, After: want, Status: "change"})
	default:
		return refuse("%s is %q now but the plan was made when it was %s: make the plan again", key, cur, sysctl.Quote(sysctl.Normalize(it.Current)))
	}
	b.set[key] = want
	b.persistSysctls = append(b.persistSysctls, sysctlEntry{comment: fmt.Sprintf("# transaction %s: was %s", pendingID, cur), key: key, value: want})
	return nil
}

// route judges plan item i, a route.
func (b *journalBuilder) route(i int, it plan.Item) error {
	if err := b.checkRoute(i, it); err != nil {
		return err
	}
	rn := b.e.routes[i]
	after, err := b.routeChange(it, rn)
	if err != nil {
		return err
	}
	return b.persistRoute(it.Route, rn, after)
}

// checkRoute refuses a route item the kernel would not take or that
// repeats another.
func (b *journalBuilder) checkRoute(i int, it plan.Item) error {
	r := it.Route
	if r == nil {
		return refuse("plan item %d (%s): a route item without its route", i+1, it.Key)
	}
	if r.Family != "inet" && r.Family != "inet6" {
		return refuse("route %s: family %s, want inet or inet6", sysctl.Quote(r.Dst), sysctl.Quote(r.Family))
	}
	if _, err := r.Target().Prefix(); err != nil {
		return refuse("%v", err)
	}
	for _, m := range []struct {
		name string
		v    int
	}{{"initcwnd", r.InitCwnd}, {"initrwnd", r.InitRwnd}} {
		if m.v < 0 || m.v > pathmodel.MaxInitWindow {
			return refuse("route %s: %s %d out of range 1..%d segments", r.Dst, m.name, m.v, pathmodel.MaxInitWindow)
		}
	}
	if r.InitCwnd == 0 && r.InitRwnd == 0 {
		return refuse("route %s: the item sets neither initcwnd nor initrwnd", r.Dst)
	}
	id := "route " + r.Family + " " + r.Dst
	if b.seen[id] {
		return refuse("route %s appears twice in the plan", r.Dst)
	}
	b.seen[id] = true
	return nil
}

// routeChange journals and reports the route change against the route
// found now, and returns the route as it will be.
func (b *journalBuilder) routeChange(it plan.Item, rn routeNow) (rtnl.Route, error) {
	r, rep := it.Route, b.rep
	after := r.Target()
	if b.o.Router == nil {
		rep.Changes = append(rep.Changes, Change{Kind: "route", Key: r.Dst, Before: it.Current, After: after.String() + " " + after.MetricsText(), Status: "skipped",
			Note: "routes are live kernel state: none under --root"})
		return after, nil
	}
	if rn.lookupErr != nil {
		return after, fmt.Errorf("route %s: %w", r.Dst, rn.lookupErr)
	}
	switch {
	case rn.exists:
		before := rn.exact
		after = before
		if r.InitCwnd > 0 {
			after.InitCwnd = r.InitCwnd
		}
		if r.InitRwnd > 0 {
			after.InitRwnd = r.InitRwnd
		}
		c := Change{Kind: "route", Key: r.Dst, Before: before.String() + " " + before.MetricsText(), After: after.String() + " " + after.MetricsText(), Status: "unchanged"}
		if after != before {
			c.Status = "change"
			b.j.Routes = append(b.j.Routes, RouteStep{Existed: true, Before: before, After: after})
		}
		rep.Changes = append(rep.Changes, c)
	case r.Exists:
		return after, refuse("the route to %s existed when the plan was made but is gone now: make the plan again", r.Dst)
	case !rn.covered:
		return after, refuse("no route covers %s: there is no gateway and device to add it with", r.Dst)
	default:
		if r.Dev != "" && (rn.cover.Dev != r.Dev || rn.cover.Gateway != r.Gateway) {
			return after, refuse("traffic to %s now follows %s, but the plan was made when it went%s: make the plan again", r.Dst, rn.cover, r.Target().Via())
		}
		after.Gateway, after.Dev, after.Table = rn.cover.Gateway, rn.cover.Dev, rn.cover.Table
		b.j.Routes = append(b.j.Routes, RouteStep{Existed: false, Before: rtnl.Route{Family: r.Family, Dst: r.Dst, Table: rn.cover.Table}, After: after})
		rep.Changes = append(rep.Changes, Change{Kind: "route", Key: r.Dst, Before: "absent: follows " + rn.cover.String(), After: after.String() + " " + after.MetricsText(), Status: "change"})
	}
	return after, nil
}

// persistRoute adds the route to its networkd drop-in, or says how to
// persist it, when the apply persists.
func (b *journalBuilder) persistRoute(r *plan.Route, rn routeNow, after rtnl.Route) error {
	rep := b.rep
	switch {
	case !b.o.Persist:
		rep.note("route %s: runtime only, lost at reboot (use --persist to write the network configuration)", r.Dst)
	case rn.networkFileError != nil:
		return fmt.Errorf("route %s: %w", r.Dst, rn.networkFileError)
	case rn.networkFile != "":
		d := networkdDropIn(rn.networkFile)
		if _, ok := b.dropIns[d]; !ok {
			b.dropInOrder = append(b.dropInOrder, d)
			b.dhcp[d] = map[string]bool{}
		}
		b.dropIns[d] = append(b.dropIns[d], after)
		b.dhcp[d][after.Dst] = r.DHCP
	case after.Dev == "":
		rep.note("route %s: its device is unknown, so its network configuration is too: not persisted", r.Dst)
	case b.e.networkManager:
		rep.note("route %s: %s", r.Dst, nmHint(after))
	default:
		rep.note("route %s: neither systemd-networkd (no .network file matches %s) nor NetworkManager manages %s: the route lasts until reboot; add \"ip route replace %s %s\" to your network configuration",
			r.Dst, after.Dev, after.Dev, after.String(), after.MetricsText())
	}
	return nil
}

// files adds the drop-ins that persist the sysctls and routes.
func (b *journalBuilder) files() error {
	if b.o.Persist && len(b.persistSysctls) > 0 {
		f := b.e.files[SysctlDropIn]
		if f.symlink {
			return refuse("%s is a symlink or not a regular file: refusing to write through it", SysctlDropIn)
		}
		content, err := renderSysctlDropIn(f.data, pendingID, b.j.Summary, b.persistSysctls)
		if err != nil {
			return refuse("%v", err)
		}
		addFile(b.j, b.rep, SysctlDropIn, f, content)
	}
	for _, d := range b.dropInOrder {
		f := b.e.files[d]
		if f.symlink {
			return refuse("%s is a symlink or not a regular file: refusing to write through it", d)
		}
		content, err := renderNetworkdDropIn(f.data, d, pendingID, b.j.Summary, b.dropIns[d], b.dhcp[d])
		if err != nil {
			return refuse("%v", err)
		}
		addFile(b.j, b.rep, d, f, content)
	}
	return nil
}

func kindRank(k string) int {
	switch k {
	case "sysctl":
		return 0
	case "route":
		return 1
	}
	return 2
}

// addFile adds a file step unless the file already says the same below
// its header.
func addFile(j *Journal, rep *Report, name string, f fileNow, content []byte) {
	if f.exists && bytes.Equal(body(f.data), body(content)) {
		rep.Changes = append(rep.Changes, Change{Kind: "file", Key: name, Before: describe(true, f.data), After: describe(true, f.data), Status: "unchanged"})
		return
	}
	j.Files = append(j.Files, FileStep{Path: name, Existed: f.exists, Mode: f.mode, Before: f.data, After: content, NewDirs: f.missingDirs})
	action := "create"
	if f.exists {
		action = "update"
	}
	rep.Changes = append(rep.Changes, Change{Kind: "file", Key: name, Before: describe(f.exists, f.data), After: describe(true, content), Status: "change"})
	rep.Files = append(rep.Files, FileChange{Path: name, Action: action, Content: string(content)})
}

// body is a drop-in without its header (the comment lines up to the first
// blank line), which names the transaction that last wrote it.
func body(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte(headerMark)) {
		return b
	}
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return b[i+1:]
	}
	return nil
}
