package plan

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

const hosts = "../../testdata/hosts/"

// ubuntuOld is old Ubuntu's defaults, as the lab's profile has them.
func ubuntuOld() map[string]string {
	return map[string]string{
		"net.ipv4.tcp_rmem":                  "4096 131072 6291456",
		"net.ipv4.tcp_wmem":                  "4096 16384 4194304",
		"net.core.rmem_max":                  "212992",
		"net.core.wmem_max":                  "212992",
		"net.ipv4.tcp_slow_start_after_idle": "1",
		"net.ipv4.tcp_no_metrics_save":       "0",
		"net.ipv4.tcp_mem":                   "188205 250942 376410",
	}
}

func item(p Plan, key string) (Item, bool) {
	for _, it := range p.Items {
		if it.Key == key {
			return it, true
		}
	}
	return Item{}, false
}

func parseTriple(t *testing.T, s string) pathmodel.Triple {
	t.Helper()
	tr, err := sysctl.ParseTriple(s)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The acceptance criterion: 200 ms / 1 Gbit/s / 1 flow gives buffers
// within 2x of the model's need, never near 2 GB, and the model then
// expects the path rate.
func TestBuffersWithinTwiceTheNeed(t *testing.T) {
	for _, fixture := range []string{"ubuntu-2004", "debian-13", "broken"} {
		t.Run(fixture, func(t *testing.T) {
			s, err := snapshot.Gather(snapshot.Options{Root: hosts + fixture})
			if err != nil {
				t.Fatal(err)
			}
			p, err := Make(s, Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Flows: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				key  string
				need int64
			}{{"net.ipv4.tcp_rmem", p.Model.ReceiverNeedBytes}, {"net.ipv4.tcp_wmem", p.Model.SenderNeedBytes}} {
				it, ok := item(p, c.key)
				if !ok {
					t.Fatalf("no %s item", c.key)
				}
				got := parseTriple(t, it.New).Max
				if got < c.need || got > 2*c.need || got >= 1<<30 {
					t.Errorf("%s max %d, need %d: want need <= max <= 2 x need", c.key, got, c.need)
				}
				cur := parseTriple(t, it.Current)
				if nt := parseTriple(t, it.New); nt.Min != cur.Min || nt.Default != cur.Default {
					t.Errorf("%s: min/default changed %s -> %s", c.key, it.Current, it.New)
				}
				if it.MemoryBytes != got || !strings.Contains(it.Why, "caps a flow at") {
					t.Errorf("%s: memory %d, why %q", c.key, it.MemoryBytes, it.Why)
				}
			}
			if p.Model.PlannedBps < 0.99e9 || p.Model.PlannedLimitedBy != "path" {
				t.Errorf("planned %g bit/s limited by %s", p.Model.PlannedBps, p.Model.PlannedLimitedBy)
			}
			if p.Kernel == "" || p.Schema != Schema {
				t.Errorf("kernel %q schema %q", p.Kernel, p.Schema)
			}
		})
	}
}

func TestOnlyRaises(t *testing.T) {
	base := ubuntuOld()
	base["net.ipv4.tcp_rmem"] = "4096 131072 67108864"
	p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9}, "6.12.0", base)
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := item(p, "net.ipv4.tcp_rmem"); ok {
		t.Errorf("lowered or touched a large enough tcp_rmem: %+v", it)
	}
	if !anyContains(p.Notes, "net.ipv4.tcp_rmem: max 64 MiB already covers") {
		t.Errorf("notes %q", p.Notes)
	}
	if _, ok := item(p, "net.ipv4.tcp_wmem"); !ok {
		t.Errorf("tcp_wmem not raised")
	}
}

func anyContains(list []string, sub string) bool {
	for _, l := range list {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func keys(p Plan) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.Key)
	}
	return out
}

func TestRoles(t *testing.T) {
	tests := []struct {
		role Role
		want []string
	}{
		{Client, []string{"net.ipv4.tcp_rmem", "app SO_RCVBUF/SO_SNDBUF"}},
		{Server, []string{"net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_no_metrics_save", "app SO_RCVBUF/SO_SNDBUF"}},
		{Both, []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_no_metrics_save", "app SO_RCVBUF/SO_SNDBUF"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.role), func(t *testing.T) {
			p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Role: tc.role}, "5.4.0-150-generic", ubuntuOld())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, keys(p)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoMetricsSaveOnlyBefore56(t *testing.T) {
	p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9}, "6.1.0", ubuntuOld())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := item(p, "net.ipv4.tcp_no_metrics_save"); ok || !anyContains(p.Notes, "since Linux 5.6") {
		t.Errorf("6.1: items %q notes %q", keys(p), p.Notes)
	}
}

func TestShortRTTLeavesIdleRestart(t *testing.T) {
	p, err := fromSysctls(Request{RTT: 5 * time.Millisecond, RateBps: 1e9}, "6.12.0", ubuntuOld())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := item(p, "net.ipv4.tcp_slow_start_after_idle"); ok {
		t.Errorf("planned slow start after idle at 5 ms")
	}
}

func TestMemoryBudget(t *testing.T) {
	sys := ubuntuOld()
	sys["net.ipv4.tcp_mem"] = "18820 25094 37641" // pressure at 98 MiB
	s := &snapshot.Snapshot{Sysctls: sys, PageSize: 4096, MemTotal: 8 << 30, Kernel: sysconf.Kernel{Release: "6.12.0", Major: 6, Minor: 12}}
	// 100 flows at 10 Gbit/s over 500 ms: 625 MB of BDP, ~1 GB of buffers.
	_, err := Make(s, Request{RTT: 500 * time.Millisecond, RateBps: 10e9, Flows: 100, MemoryBudget: 512 << 20})
	if !badinput.Is(err) || !strings.Contains(err.Error(), "more than the memory budget 512 MiB") || strings.Contains(err.Error(), "\n") {
		t.Errorf("over budget: %v", err)
	}
	// The default budget is a quarter of RAM.
	_, err = Make(s, Request{RTT: 500 * time.Millisecond, RateBps: 40e9, Flows: 100})
	if err == nil || !strings.Contains(err.Error(), "25% of RAM") {
		t.Errorf("over the default budget: %v", err)
	}
	// Within budget, tcp_mem's pressure is raised to hold the flows.
	p, err := Make(s, Request{RTT: 200 * time.Millisecond, RateBps: 10e9, Flows: 10, MemoryBudget: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := item(p, "net.ipv4.tcp_mem")
	if !ok {
		t.Fatalf("no tcp_mem item: %q", keys(p))
	}
	v, _ := sysctl.ParseInts(it.New, 3)
	need := p.Memory.NeededBytes
	if v[1]*4096 < need*5/4 || v[2] < v[1] || v[0] != 18820 || it.Scope != ScopeHost {
		t.Errorf("tcp_mem %s for %d bytes needed (scope %s)", it.New, need, it.Scope)
	}
	if p.Memory.TCPMemPressureBytes != v[1]*4096 {
		t.Errorf("memory summary pressure %d", p.Memory.TCPMemPressureBytes)
	}
}

func TestAppBuffers(t *testing.T) {
	p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9, AppBuffers: true}, "6.12.0", ubuntuOld())
	if err != nil {
		t.Fatal(err)
	}
	rmem, _ := item(p, "net.ipv4.tcp_rmem")
	core, ok := item(p, "net.core.rmem_max")
	if !ok || core.Scope != ScopeHost {
		t.Fatalf("no host-scope rmem_max item: %+v", core)
	}
	var n int64
	if err := json.Unmarshal([]byte(core.New), &n); err != nil || 2*n != parseTriple(t, rmem.New).Max {
		t.Errorf("rmem_max %s: want half of the planned tcp_rmem max %s (the kernel doubles SO_RCVBUF)", core.New, rmem.New)
	}
	app, _ := item(p, "app SO_RCVBUF/SO_SNDBUF")
	if !strings.Contains(app.New, "nginx: listen 443 ssl sndbuf=") || !strings.Contains(app.New, "rcvbuf=23m") || !strings.Contains(app.New, "iperf3 -w 23m") {
		t.Errorf("app snippet %q", app.New)
	}
	if _, ok := item(p, "net.core.wmem_max"); !ok {
		t.Errorf("no wmem_max item")
	}
}

func TestPrerequisites(t *testing.T) {
	base := ubuntuOld()
	base["net.ipv4.tcp_window_scaling"] = "0"
	base["net.ipv4.tcp_moderate_rcvbuf"] = "0"
	base["net.ipv4.tcp_sack"] = "0"
	p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9}, "6.12.0", base)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"net.ipv4.tcp_window_scaling", "net.ipv4.tcp_moderate_rcvbuf"} {
		if it, ok := item(p, k); !ok || it.New != "1" {
			t.Errorf("%s: %+v", k, it)
		}
	}
	if !anyContains(p.Warnings, "net.ipv4.tcp_sack off") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func snapWithRoutes(release string, routes ...rtnl.Route) *snapshot.Snapshot {
	k, _ := sysconf.ParseKernelRelease(release)
	return &snapshot.Snapshot{Sysctls: ubuntuOld(), PageSize: 4096, Kernel: k, Net: &rtnl.State{Routes: routes}}
}

func TestRouteItems(t *testing.T) {
	def := rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, Protocol: "dhcp"}
	lan := rtnl.Route{Family: "inet", Dst: "10.0.0.0/24", Dev: "eth0", Table: 254, Protocol: "kernel"}
	wan := rtnl.Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.2", Dev: "eth0", Table: 254, InitCwnd: 10}
	tests := []struct {
		name    string
		s       *snapshot.Snapshot
		req     Request
		wantNew string
		want    Route
	}{
		{"new route copied from the default", snapWithRoutes("6.12.0", def, lan), Request{Dst: netip.MustParsePrefix("203.0.113.7/24")},
			"add 203.0.113.0/24 via 10.0.0.1 dev eth0 initcwnd 20",
			Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, DHCP: true, InitCwnd: 20}},
		{"existing route changed in place", snapWithRoutes("6.12.0", def, wan), Request{Dst: netip.MustParsePrefix("203.0.113.0/24")},
			"203.0.113.0/24 via 10.0.0.2 dev eth0 initcwnd 20",
			Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.2", Dev: "eth0", Table: 254, Exists: true, InitCwnd: 20}},
		{"the default route when asked", snapWithRoutes("6.12.0", def), Request{DstDefault: true},
			"default via 10.0.0.1 dev eth0 initcwnd 20",
			Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, Exists: true, DHCP: true, InitCwnd: 20}},
		{"old receiver raises initrwnd too", snapWithRoutes("4.15.0-20-generic", def), Request{Dst: netip.MustParsePrefix("203.0.113.0/24")},
			"add 203.0.113.0/24 via 10.0.0.1 dev eth0 initcwnd 20 initrwnd 20",
			Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, DHCP: true, InitCwnd: 20, InitRwnd: 20}},
		{"no routes in the snapshot", &snapshot.Snapshot{Sysctls: ubuntuOld(), Kernel: sysconf.Kernel{Release: "6.12.0", Major: 6, Minor: 12}}, Request{Dst: netip.MustParsePrefix("203.0.113.0/24")},
			"add 203.0.113.0/24 initcwnd 20",
			Route{Family: "inet", Dst: "203.0.113.0/24", InitCwnd: 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.RTT, tc.req.RateBps = 100*time.Millisecond, 100e6
			p, err := Make(tc.s, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var got *Item
			for i := range p.Items {
				if p.Items[i].Kind == KindRoute {
					got = &p.Items[i]
				}
			}
			if got == nil {
				t.Fatalf("no route item: %q, notes %q", keys(p), p.Notes)
			}
			if got.New != tc.wantNew {
				t.Errorf("new %q, want %q", got.New, tc.wantNew)
			}
			if diff := cmp.Diff(tc.want, *got.Route); diff != "" {
				t.Errorf("route (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Why, "round trips") {
				t.Errorf("why %q", got.Why)
			}
		})
	}
	// A client on a current kernel has nothing to plan on the route.
	p, err := Make(snapWithRoutes("6.12.0", def), Request{RTT: 100 * time.Millisecond, RateBps: 100e6, Role: Client, Dst: netip.MustParsePrefix("203.0.113.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Kind == KindRoute {
			t.Errorf("client route item %+v", it)
		}
	}
	// A path whose BDP is smaller than 20 segments keeps IW10.
	p, err = Make(snapWithRoutes("6.12.0", def), Request{RTT: 10 * time.Millisecond, RateBps: 10e6, Role: Server, Dst: netip.MustParsePrefix("203.0.113.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Kind == KindRoute {
			t.Errorf("initcwnd planned above the BDP: %+v", it)
		}
	}
}

func TestNamespaceSysctls(t *testing.T) {
	p, err := fromSysctls(Request{RTT: 200 * time.Millisecond, RateBps: 1e9, AppBuffers: true}, "6.12.0", ubuntuOld())
	if err != nil {
		t.Fatal(err)
	}
	got := NamespaceSysctls(p)
	rmem, _ := item(p, "net.ipv4.tcp_rmem")
	wmem, _ := item(p, "net.ipv4.tcp_wmem")
	want := map[string]string{
		"net.ipv4.tcp_rmem":                  rmem.New,
		"net.ipv4.tcp_wmem":                  wmem.New,
		"net.ipv4.tcp_slow_start_after_idle": "0",
	}
	if rmem.New != "4096 131072 48234496" { // 37,878,788 x 1.25 -> 46 MiB
		t.Errorf("tcp_rmem %q", rmem.New)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NamespaceSysctls (-want +got):\n%s", diff)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	p, err := Make(snapWithRoutes("6.12.0", rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254}),
		Request{RTT: 200 * time.Millisecond, RateBps: 1e9, Dst: netip.MustParsePrefix("203.0.113.0/24"), AppBuffers: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if back.Path.RTT() != 200*time.Millisecond {
		t.Errorf("RTT %v", back.Path.RTT())
	}
}

func TestBadRequests(t *testing.T) {
	s := snapWithRoutes("6.12.0")
	ok := Request{RTT: 200 * time.Millisecond, RateBps: 1e9}
	tests := []struct {
		name   string
		mutate func(*Request)
		want   string
	}{
		{"role", func(r *Request) { r.Role = "router" }, "role"},
		{"flows", func(r *Request) { r.Flows = -2 }, "flows"},
		{"budget", func(r *Request) { r.MemoryBudget = -1 }, "budget"},
		{"share", func(r *Request) { r.BudgetShare = 2 }, "share"},
		{"dst and default", func(r *Request) { r.Dst, r.DstDefault = netip.MustParsePrefix("10.0.0.0/8"), true }, "not both"},
		{"zero rtt", func(r *Request) { r.RTT = 0 }, "rtt"},
		{"zero rate", func(r *Request) { r.RateBps = 0 }, "rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mutate(&r)
			_, err := Make(s, r)
			if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Make: %v, want an input error about %s", err, tc.want)
			}
		})
	}
	if _, err := Make(nil, ok); err == nil {
		t.Errorf("nil snapshot accepted")
	}
}

// A path too long for one flow's largest window says how many flows.
func TestTooFewFlowsWarns(t *testing.T) {
	p, err := fromSysctls(Request{RTT: 600 * time.Millisecond, RateBps: 40e9}, "6.12.0", ubuntuOld())
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(p.Warnings, "use at least 3 flows") {
		t.Errorf("warnings %q", p.Warnings)
	}
	it, _ := item(p, "net.ipv4.tcp_rmem")
	if m := parseTriple(t, it.New).Max; m > pathmodel.MaxBuffer {
		t.Errorf("tcp_rmem max %d above the int limit", m)
	}
}

// fromSysctls makes a plan for a host described only by its kernel
// release and sysctl values (dotted keys, as in a lab profile such as old
// Ubuntu defaults), with memory unknown.
func fromSysctls(req Request, kernelRelease string, sysctls map[string]string) (Plan, error) {
	s := &snapshot.Snapshot{Source: "sysctl values", Sysctls: map[string]string{}, PageSize: 4096}
	for k, v := range sysctls {
		s.Sysctls[k] = v
	}
	k, err := sysconf.ParseKernelRelease(kernelRelease)
	if err != nil {
		return Plan{}, err
	}
	s.Kernel = k
	return Make(s, req)
}

// A measured PMTU black hole turns MTU probing on for a sender that has it
// off, and only then.
func TestMTUProbing(t *testing.T) {
	for _, c := range []struct {
		asked   bool
		role    Role
		current string
		want    bool
	}{{true, Server, "0", true}, {true, Both, "0", true}, {true, Client, "0", false}, {true, Server, "1", false}, {false, Server, "0", false}} {
		base := ubuntuOld()
		base["net.ipv4.tcp_mtu_probing"] = c.current
		p, err := fromSysctls(Request{RTT: 100 * time.Millisecond, RateBps: 1e8, Role: c.role, MTUProbing: c.asked}, "6.12.0", base)
		if err != nil {
			t.Fatal(err)
		}
		if it, ok := item(p, "net.ipv4.tcp_mtu_probing"); ok != c.want || (ok && (it.Current != "0" || it.New != "1")) {
			t.Errorf("%+v: item %+v %v", c, it, ok)
		}
	}
}
