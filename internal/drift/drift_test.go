package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
)

func testPlan() plan.Plan {
	return plan.Plan{Schema: plan.Schema, Kernel: "6.1.0", Items: []plan.Item{
		{Key: "net.ipv4.tcp_rmem", Kind: plan.KindSysctl, Scope: plan.ScopeNetns, New: "4096 131072 62914560"},
		{Key: "net.core.rmem_max", Kind: plan.KindSysctl, Scope: plan.ScopeHost, New: "33554432"},
		{Key: "net.ipv4.tcp_no_metrics_save", Kind: plan.KindSysctl, Scope: plan.ScopeNetns, New: "1"},
		{Key: "route default", Kind: plan.KindRoute, Route: &plan.Route{Family: "inet", Dst: "default", InitCwnd: 20}},
		{Key: "app SO_RCVBUF", Kind: plan.KindApp, New: "leave unset"},
	}}
}

func TestCompare(t *testing.T) {
	type row struct{ Key, Have, Status string }
	defRoute := func(cwnd int) *rtnl.State {
		return &rtnl.State{Routes: []rtnl.Route{{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, InitCwnd: cwnd}}}
	}
	tests := []struct {
		name    string
		snap    snapshot.Snapshot
		want    []row
		drifted int
	}{
		{"as planned, tabs in the kernel's text", snapshot.Snapshot{
			Kernel:  sysconf.Kernel{Release: "6.1.0"},
			Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096\t131072\t62914560", "net.core.rmem_max": "33554432", "net.ipv4.tcp_no_metrics_save": "1"},
			Net:     defRoute(20),
		}, []row{{"net.ipv4.tcp_rmem", "4096 131072 62914560", OK}, {"net.core.rmem_max", "33554432", OK}, {"net.ipv4.tcp_no_metrics_save", "1", OK}, {"route default", "initcwnd 20", OK}}, 0},
		{"larger is still drift; route metric unset", snapshot.Snapshot{
			Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 67108864", "net.core.rmem_max": "33554432", "net.ipv4.tcp_no_metrics_save": "0"},
			Net:     defRoute(0),
		}, []row{{"net.ipv4.tcp_rmem", "4096 131072 67108864", Drifted}, {"net.core.rmem_max", "33554432", OK}, {"net.ipv4.tcp_no_metrics_save", "0", Drifted}, {"route default", "initcwnd/initrwnd unset", Drifted}}, 3},
		{"namespace: host-wide skipped; key missing; no routes", snapshot.Snapshot{
			Netns:       "ns1",
			Sysctls:     map[string]string{"net.ipv4.tcp_rmem": "4096 131072 62914560"},
			MissingKeys: []string{"net.ipv4.tcp_no_metrics_save"},
		}, []row{{"net.ipv4.tcp_rmem", "4096 131072 62914560", OK}, {"net.core.rmem_max", "", Skipped}, {"net.ipv4.tcp_no_metrics_save", "absent", Drifted}, {"route default", "", Skipped}}, 1},
		{"route gone", snapshot.Snapshot{
			Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 62914560", "net.core.rmem_max": "33554432", "net.ipv4.tcp_no_metrics_save": "1"},
			Net:     &rtnl.State{},
		}, []row{{"net.ipv4.tcp_rmem", "4096 131072 62914560", OK}, {"net.core.rmem_max", "33554432", OK}, {"net.ipv4.tcp_no_metrics_save", "1", OK}, {"route default", "absent", Drifted}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Compare(&tc.snap, testPlan())
			var got []row
			for _, c := range rep.Checks {
				got = append(got, row{c.Key, c.Have, c.Status})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
			if rep.Drifted != tc.drifted || rep.Schema != Schema {
				t.Errorf("drifted %d (want %d), schema %q", rep.Drifted, tc.drifted, rep.Schema)
			}
		})
	}
}

func TestCompareNotesKernel(t *testing.T) {
	rep := Compare(&snapshot.Snapshot{Kernel: sysconf.Kernel{Release: "6.12.0"}, Sysctls: map[string]string{}}, testPlan())
	if len(rep.Notes) != 1 {
		t.Errorf("notes %q, want one naming both kernels", rep.Notes)
	}
}
