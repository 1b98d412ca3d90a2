package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/sysconf"
)

func TestMatchesName(t *testing.T) {
	tests := []struct {
		name, file, dev string
		want            bool
	}{
		{"exact", "[Match]\nName=eth0\n", "eth0", true},
		{"other", "[Match]\nName=eth1\n", "eth0", false},
		{"glob", "[Match]\nName=en* eth*\n", "eth0", true},
		{"inverted", "[Match]\nName=!eth0\n", "eth0", false},
		{"inverted other", "[Match]\nName=!lo\n", "eth0", true},
		{"reset list", "[Match]\nName=eth0\nName=\nName=wlan0\n", "eth0", false},
		{"empty match matches all", "[Match]\n[Network]\nDHCP=yes\n", "eth0", true},
		{"only other properties", "[Match]\nMACAddress=00:11:22:33:44:55\n", "eth0", false},
		{"name outside match ignored", "[Network]\nName=eth0\n[Match]\nName=eth1\n", "eth0", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchesName([]byte(tc.file), tc.dev); got != tc.want {
				t.Errorf("matchesName(%q, %s) = %v, want %v", tc.file, tc.dev, got, tc.want)
			}
		})
	}
}

func TestNetworkFileOrder(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/lib/systemd/network/99-default.network", "[Match]\nName=*\n")
	write("run/systemd/network/10-netplan-eth0.network", "[Match]\nName=eth0\n")
	write("etc/systemd/network/20-other.network", "[Match]\nName=eth1\n")
	got, err := networkFile(root, "eth0")
	if err != nil || got != "/run/systemd/network/10-netplan-eth0.network" {
		t.Errorf("networkFile = %q, %v", got, err)
	}
	if d := networkdDropIn(got); d != "/etc/systemd/network/10-netplan-eth0.network.d/90-longhaul.conf" {
		t.Errorf("drop-in %s", d)
	}
	got, _ = networkFile(root, "wg0")
	if got != "/usr/lib/systemd/network/99-default.network" {
		t.Errorf("catch-all: %q", got)
	}
	// An /etc file of the same name masks the /usr/lib one.
	write("etc/systemd/network/99-default.network", "[Match]\nName=eth9\n")
	if got, _ = networkFile(root, "wg0"); got != "" {
		t.Errorf("masked catch-all still used: %q", got)
	}
}

func TestRenderSysctlDropInMerges(t *testing.T) {
	first, err := renderSysctlDropIn(nil, "0001", "s1", []sysctlEntry{
		{"# transaction 0001: was 1", "net.ipv4.tcp_slow_start_after_idle", "0"},
		{"# transaction 0001: was 4096 131072 6291456", "net.ipv4.tcp_rmem", "4096 131072 62914560"},
	})
	if err != nil {
		t.Fatal(err)
	}
	second, err := renderSysctlDropIn(first, "0002", "s2", []sysctlEntry{
		{"# transaction 0002: was 4096 131072 62914560", "net.ipv4.tcp_rmem", "4096 131072 90177536"},
		{"# transaction 0002: was 0", "net.ipv4.tcp_slow_start_after_idle", "0"},
		{"# transaction 0002: was 4096 16384 4194304", "net.ipv4.tcp_wmem", "4096 16384 32505856"},
	})
	if err != nil {
		t.Fatal(err)
	}
	as, probs := sysconf.ParseSysctlFile("x", strings.NewReader(string(second)))
	if len(probs) != 0 {
		t.Fatalf("problems: %q", probs)
	}
	var got []string
	for _, a := range as {
		got = append(got, a.Key+"="+a.Value)
	}
	want := []string{"net.ipv4.tcp_slow_start_after_idle=0", "net.ipv4.tcp_rmem=4096 131072 90177536", "net.ipv4.tcp_wmem=4096 16384 32505856"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged assignments (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(second), "# transaction 0001: was 1\n") || !strings.Contains(string(second), "transaction 0002\n") {
		t.Errorf("comments or header lost:\n%s", second)
	}
	if _, err := renderSysctlDropIn([]byte("vm.swappiness=1\n"), "0003", "s", nil); err == nil {
		t.Errorf("overwrote a file longhaul did not write")
	}
}

func TestRenderNetworkdDropInMerges(t *testing.T) {
	a := rtnl.Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.1", Dev: "eth0", InitCwnd: 20}
	b := rtnl.Route{Family: "inet", Dst: "198.51.100.0/24", Gateway: "10.0.0.1", Dev: "eth0", InitCwnd: 20}
	d := rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", InitCwnd: 16}
	first, err := renderNetworkdDropIn(nil, "f", "0001", "s", []rtnl.Route{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.InitCwnd = 30
	second, err := renderNetworkdDropIn(first, "f", "0002", "s", []rtnl.Route{b, a, d}, map[string]bool{"default": true})
	if err != nil {
		t.Fatal(err)
	}
	keys, blocks := routeBlocks(second)
	if diff := cmp.Diff([]string{"203.0.113.0/24", "198.51.100.0/24", "default"}, keys); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	if !strings.Contains(blocks["203.0.113.0/24"], "InitialCongestionWindow=30") || !strings.Contains(blocks["default"], "Gateway=_dhcp4") || strings.Contains(blocks["default"], "Destination=") {
		t.Errorf("blocks: %q", blocks)
	}
}

func TestSysctlConflicts(t *testing.T) {
	cfg := &sysconf.Config{Assignments: []sysconf.Assignment{
		{Key: "net.ipv4.tcp_rmem", Value: "4096 87380 33554432", File: "/etc/sysctl.d/60-fasterdata.conf", Line: 2},
		{Key: "net.ipv4.tcp_rmem", Value: "4096 131072 62914560", File: SysctlDropIn, Line: 7},
		{Key: "net.ipv4.tcp_*mem", Value: "1 2 3", File: "/etc/sysctl.d/95-globs.conf", Line: 1, Glob: true},
		{Key: "net.ipv4.tcp_rmem", Value: "4096 87380 16777216", File: "/etc/sysctl.conf", Line: 2},
	}}
	set := map[string]string{"net.ipv4.tcp_rmem": "4096 131072 62914560"}
	conflicts, notes := sysctlConflicts(cfg, set, true)
	if len(conflicts) != 2 || !strings.Contains(conflicts[0], "95-globs.conf:1") || !strings.Contains(conflicts[1], "/etc/sysctl.conf:2") {
		t.Errorf("conflicts %q", conflicts)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "60-fasterdata.conf:2") {
		t.Errorf("notes %q", notes)
	}
	conflicts, notes = sysctlConflicts(cfg, set, false)
	if len(conflicts) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "runtime only") || !strings.Contains(notes[0], "/etc/sysctl.conf:2") {
		t.Errorf("without persist: conflicts %q notes %q", conflicts, notes)
	}
}

func TestJournalRoundTripAndDamage(t *testing.T) {
	j := &Journal{Schema: JournalSchema, ID: "0001", State: StateApplying, Sysctls: []SysctlStep{{"k", "1\n", "0"}},
		Files: []FileStep{{Path: "/etc/x", Before: []byte{0, 1, 2, '\n'}, After: []byte("new")}}}
	b, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeJournal(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(j, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for name, bad := range map[string][]byte{
		"truncated":     b[:len(b)-10],
		"no trailer":    b[:strings.Index(string(b), trailer)],
		"edited":        []byte(strings.Replace(string(b), `"k"`, `"j"`, 1)),
		"extra byte":    append(append([]byte{}, b...), 'x'),
		"empty":         nil,
		"bad state":     mustEncode(t, &Journal{Schema: JournalSchema, ID: "0001", State: "half"}),
		"other schema":  mustEncode(t, &Journal{Schema: "x", ID: "0001", State: StateApplied}),
		"unknown field": withTrailer([]byte(`{"schema":"longhaul.journal/v1","state":"applied","evil":1}` + "\n")),
	} {
		if _, err := decodeJournal(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func mustEncode(t *testing.T, j *Journal) []byte {
	b, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withTrailer(body []byte) []byte {
	sum := sumHex(body)
	return append(body, []byte(trailer+sum+"\n")...)
}
