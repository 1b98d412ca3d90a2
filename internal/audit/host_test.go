package audit

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
)

func TestInitialWindows(t *testing.T) {
	withNet := func(st *rtnl.State) *snapshot.Snapshot {
		s := snap(kRmem, rmem6M, kWmem, wmem4M)
		s.Net = st
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		p     Path
		want  []idSev
		texts texts
	}{
		{
			name: "unset, no path", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}}),
			want: []idSev{{"initial-windows", Info}},
			texts: texts{
				observed: []string{"inet route via 192.0.2.1 dev eth0", "initcwnd unset (kernel default)", "initrwnd unset (kernel default)"},
				fix:      []string{"none needed"},
			},
		},
		{
			// A 64,000-byte response: flights of 14,480, 28,960 and the
			// rest after the handshake (4 round trips); with initcwnd 20
			// 28,960 then the rest (3).
			name: "unset, path 200 ms", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}}), p: longPath,
			want: []idSev{{"initial-windows", Info}},
			texts: texts{
				why: []string{"64 kB response takes 4 round trips", "3 with initcwnd 20"},
				fix: []string{"ip route change default via 192.0.2.1 dev eth0 initcwnd 20;"},
			},
		},
		{
			name: "already 20/20, path 200 ms: no better", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(20, 20)}}), p: longPath,
			want:  []idSev{{"initial-windows", Info}},
			texts: texts{observed: []string{"initcwnd 20, initrwnd 20"}, fix: []string{"none needed"}},
		},
		{
			name: "first default route of the main table wins",
			s: withNet(&rtnl.State{Routes: []rtnl.Route{
				{Family: "inet", Dst: "10.0.0.0/8", Dev: "eth1", Table: 254, InitCwnd: 40},
				{Family: "inet", Dst: "default", Dev: "wg0", Table: 100, InitCwnd: 30},
				defaultRoute(16, 0),
			}}),
			want:  []idSev{{"initial-windows", Info}},
			texts: texts{observed: []string{"dev eth0", "initcwnd 16"}},
		},
		{name: "no Net", s: snap(kRmem, rmem6M), p: longPath, want: []idSev{}},
		{name: "no default route", s: withNet(&rtnl.State{Routes: []rtnl.Route{{Family: "inet", Dst: "10.0.0.0/8", Table: 254}}}), p: longPath, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkInitialWindows(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestLink(t *testing.T) {
	withLink := func(l *rtnl.Link) *snapshot.Snapshot {
		s := snap()
		s.Net = &rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}, DefaultLink: l}
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts map[string]texts
	}{
		{
			// 1400 - 52 = 1348 payload bytes, 1 - 1348/1448 = 6.9% less.
			name: "mtu 1400", s: withLink(link(1400, "")),
			want: []idSev{{"mtu", Info}},
			texts: map[string]texts{"mtu": {
				observed: []string{"eth0 MTU 1400"},
				why:      []string{"1348 payload bytes", "7% less"},
				fix:      []string{"ip link set eth0 mtu 1500"},
			}},
		},
		{name: "mtu 1500", s: withLink(link(1500, "")), want: []idSev{}},
		{name: "mtu 9000", s: withLink(link(9000, "")), want: []idSev{}},
		{
			name: "tso off", s: withLink(link(1500, "", "tcp-segmentation-offload")),
			want: []idSev{{"offloads-off", Warn}},
			texts: map[string]texts{"offloads-off": {
				observed: []string{"eth0: tcp-segmentation-offload off"},
				fix:      []string{"ethtool -K eth0 tso on"},
			}},
		},
		{
			name: "tso and gro off, named in order", s: withLink(link(1500, "", "generic-receive-offload", "tcp-segmentation-offload")),
			want:  []idSev{{"offloads-off", Warn}},
			texts: map[string]texts{"offloads-off": {observed: []string{"tcp-segmentation-offload, generic-receive-offload off"}}},
		},
		{name: "only lro off: no finding", s: withLink(link(1500, "", "large-receive-offload")), want: []idSev{}},
		{name: "offloads not reported", s: withLink(&rtnl.Link{Name: "eth0", MTU: 1500}), want: []idSev{}},
		{
			name: "qdisc", s: withLink(link(1500, "fq_codel")),
			want:  []idSev{{"qdisc", Info}},
			texts: map[string]texts{"qdisc": {observed: []string{"eth0 root qdisc fq_codel, txqueuelen 1000"}}},
		},
		{
			name: "all three, in check order", s: withLink(link(1400, "pfifo_fast", "generic-segmentation-offload")),
			want: []idSev{{"mtu", Info}, {"offloads-off", Warn}, {"qdisc", Info}},
		},
		{name: "no default link", s: withLink(nil), want: []idSev{}},
		{name: "no Net", s: snap(), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkLink(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, w := range tc.texts {
				checkTexts(t, one(t, fs, id), w)
			}
		})
	}
}

// ---- configuration and daemons ----

func TestConflicts(t *testing.T) {
	const (
		early = "/etc/sysctl.d/10-network.conf"
		late  = "/etc/sysctl.d/99-tuning.conf"
	)
	withConfig := func(runtime string, as ...sysconf.Assignment) *snapshot.Snapshot {
		s := snap()
		if runtime != "" {
			s.Sysctls[kRmem] = runtime
		}
		s.Config = &sysconf.Config{Files: []string{early, late}, Assignments: as}
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts map[string]texts
	}{
		{
			name: "two files, different values: the later wins",
			s:    withConfig(rmem32M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"sysctl-conflict", Warn}},
			texts: map[string]texts{"sysctl-conflict": {
				observed: []string{"set in 2 places", early + ":3 = " + rmem6M, late + ":7 = " + rmem32M},
				why:      []string{late + " wins"},
				fix:      []string{"keep net.ipv4.tcp_rmem in " + late},
			}},
		},
		{
			name: "values differ only in white space: no conflict",
			s:    withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, "4096  131072\t6291456 ", late, 7)),
			want: []idSev{},
		},
		{
			name: "same value twice: no conflict", s: withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem6M, late, 7)),
			want: []idSev{},
		},
		{
			name: "runtime differs from the effective config",
			s:    withConfig(rmem6M, assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"config-not-applied", Info}},
			texts: map[string]texts{"config-not-applied": {
				observed: []string{"is " + rmem6M + " at runtime but " + late + ":7 sets " + rmem32M},
				fix:      []string{"sysctl -p " + late},
			}},
		},
		{
			name: "conflict and runtime from the losing file",
			s:    withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"sysctl-conflict", Warn}, {"config-not-applied", Info}},
			texts: map[string]texts{"config-not-applied": {
				observed: []string{late + ":7 sets " + rmem32M},
			}},
		},
		{
			name: "runtime agrees up to white space",
			s:    withConfig(rmem6M, assign(kRmem, "4096\t131072   6291456", late, 7)),
			want: []idSev{},
		},
		{
			name: "key not read at runtime: nothing to compare",
			s:    withConfig("", assign("net.ipv4.conf.all.rp_filter", "2", late, 1)),
			want: []idSev{},
		},
		{name: "no config", s: snap(kRmem, rmem6M), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkConflicts(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, w := range tc.texts {
				checkTexts(t, one(t, fs, id), w)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	const (
		key  = "net.ipv4.tcp_collapse_max_bytes"
		file = "/etc/sysctl.d/90-cloudflare.conf"
	)
	withUnknown := func(ignoreMissing bool) *snapshot.Snapshot {
		s := snap()
		a := assign(key, "6291456", file, 4)
		a.IgnoreMissing = ignoreMissing
		s.Config = &sysconf.Config{Files: []string{file}, Assignments: []sysconf.Assignment{a}}
		s.ConfigUnknownKeys = []string{key}
		return s
	}
	noConfig := snap()
	noConfig.ConfigUnknownKeys = []string{key}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts texts
	}{
		{
			name: "unknown key: warn", s: withUnknown(false),
			want: []idSev{{"unknown-key", Warn}},
			texts: texts{
				observed: []string{file + ":4 sets " + key, "kernel 6.18.0-1-amd64"},
				fix:      []string{"delete the line from " + file},
			},
		},
		{
			name: "unknown key with '-': info", s: withUnknown(true),
			want:  []idSev{{"unknown-key", Info}},
			texts: texts{why: []string{"'-' prefix"}},
		},
		{name: "no config", s: noConfig, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkUnknownKeys(tc.s, Path{})
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestDaemons(t *testing.T) {
	tests := []struct {
		name    string
		daemons []sysconf.Process
		want    []idSev
		fix     string
	}{
		{"tuned", []sysconf.Process{{PID: 812, Name: "tuned"}}, []idSev{{"tuning-daemon", Warn}}, "tuned-adm active"},
		{"bpftune", []sysconf.Process{{PID: 90, Name: "bpftune"}}, []idSev{{"tuning-daemon", Warn}}, "systemctl disable --now bpftune"},
		{"NetworkManager", []sysconf.Process{{PID: 700, Name: "NetworkManager"}}, []idSev{}, ""},
		{"systemd-networkd", []sysconf.Process{{PID: 701, Name: "systemd-networkd"}}, []idSev{}, ""},
		{
			"both tuners and a network daemon",
			[]sysconf.Process{{PID: 90, Name: "bpftune"}, {PID: 700, Name: "NetworkManager"}, {PID: 812, Name: "tuned"}},
			[]idSev{{"tuning-daemon", Warn}, {"tuning-daemon", Warn}}, "",
		},
		{"none", nil, []idSev{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snap()
			s.Daemons = tc.daemons
			fs := checkDaemons(s, Path{})
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if tc.fix != "" {
				d := tc.daemons[0]
				checkTexts(t, fs[0], texts{
					observed: []string{fmt.Sprintf("%s is running (pid %d)", d.Name, d.PID)},
					fix:      []string{tc.fix},
				})
				if want := "process " + d.Name; fs[0].Key != want {
					t.Errorf("Key: want %q, got %q", want, fs[0].Key)
				}
			}
		})
	}
}

// ---- Run and Worst ----
