package topo

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSysctl(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Sysctl
		wantErr string // substring; "" means success
	}{
		{name: "dotted", in: "net.ipv4.tcp_rmem=4096 131072 6291456",
			want: Sysctl{Key: "net.ipv4.tcp_rmem", Value: "4096 131072 6291456"}},
		{name: "slashed with spaces", in: " net/ipv4/tcp_rmem = 4096 131072 6291456 ",
			want: Sysctl{Key: "net.ipv4.tcp_rmem", Value: "4096 131072 6291456"}},
		{name: "dash in interface name", in: "net.ipv6.conf.lh-0.disable_ipv6=1",
			want: Sysctl{Key: "net.ipv6.conf.lh-0.disable_ipv6", Value: "1"}},
		{name: "value with equals sign", in: "net.ipv4.tcp_congestion_control=a=b",
			want: Sysctl{Key: "net.ipv4.tcp_congestion_control", Value: "a=b"}},
		{name: "no equals", in: "net.ipv4.tcp_rmem", wantErr: `topo: sysctl "net.ipv4.tcp_rmem": missing '=' (want key=value)`},
		{name: "empty key", in: "=1", wantErr: "empty key"},
		{name: "empty value", in: "net.ipv4.tcp_rmem=", wantErr: "empty value"},
		{name: "space in key", in: "net.ipv4.tcp rmem=1", wantErr: `character ' ' is not allowed`},
		{name: "colon in key", in: "net.ipv4:x=1", wantErr: `character ':' is not allowed`},
		{name: "empty component", in: "net..ipv4=1", wantErr: "empty component"},
		{name: "dot dot", in: "net/../kernel/pid_max=1", wantErr: "empty component"},
		{name: "not a net key", in: "kernel.pid_max=100000", wantErr: "not under net."},
		{name: "multi-line value", in: "net.ipv4.tcp_rmem=1\n2", wantErr: "single line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSysctl(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSysctl(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				checkOneLine(t, err)
				return
			}
			if err != nil {
				t.Fatalf("ParseSysctl(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSysctl(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	a := netip.MustParseAddr
	sc := func(s string) Sysctl {
		k, v, _ := strings.Cut(s, "=")
		return Sysctl{Key: k, Value: v}
	}
	tests := []struct {
		name    string
		spec    Spec
		wantErr string // substring; "" means valid
	}{
		{name: "zero spec uses defaults", spec: Spec{}},
		{name: "explicit values", spec: Spec{Prefix: "lhA1", ClientAddr: a("198.19.255.1"), ServerAddr: a("198.18.7.9"),
			MTU: 9000, TxQueueLen: 1, CC: "reno",
			ClientSysctls: []Sysctl{sc("net.ipv4.tcp_rmem=4096 131072 8388608")},
			ServerSysctls: []Sysctl{sc("net/ipv4/tcp_wmem=4096 16384 8388608")}}},
		{name: "ipv4-mapped address", spec: Spec{ClientAddr: a("::ffff:198.18.0.5")}},
		{name: "client outside range", spec: Spec{ClientAddr: a("10.0.0.1")},
			wantErr: "topo: spec: client address 10.0.0.1 is outside 198.18.0.0/15"},
		{name: "server just above range", spec: Spec{ServerAddr: a("198.20.0.1")},
			wantErr: "server address 198.20.0.1 is outside 198.18.0.0/15"},
		{name: "ipv6 address", spec: Spec{ServerAddr: a("2001:db8::1")}, wantErr: "server address 2001:db8::1 is not IPv4"},
		{name: "same addresses", spec: Spec{ClientAddr: a("198.18.0.2")}, wantErr: "client and server address are both 198.18.0.2"},
		{name: "mtu too small", spec: Spec{MTU: 67}, wantErr: "mtu 67 out of range 68..65535"},
		{name: "mtu too big", spec: Spec{MTU: 65536}, wantErr: "mtu 65536 out of range"},
		{name: "negative mtu", spec: Spec{MTU: -1}, wantErr: "mtu -1 out of range"},
		{name: "negative txqueuelen", spec: Spec{TxQueueLen: -5}, wantErr: "txqueuelen -5 out of range"},
		{name: "dash in prefix", spec: Spec{Prefix: "lh-x"}, wantErr: `prefix "lh-x": character '-' is not allowed`},
		{name: "prefix starts with digit", spec: Spec{Prefix: "1lh"}, wantErr: "must start with a letter"},
		{name: "long prefix", spec: Spec{Prefix: strings.Repeat("a", 33)}, wantErr: "longer than 32 bytes"},
		{name: "bad sysctl key", spec: Spec{ClientSysctls: []Sysctl{sc("net.ipv4.tcp rmem=1")}},
			wantErr: "client sysctl net.ipv4.tcp rmem=1: key: character ' ' is not allowed"},
		{name: "global sysctl", spec: Spec{ServerSysctls: []Sysctl{sc("vm.swappiness=1")}},
			wantErr: "server sysctl vm.swappiness=1: key \"vm.swappiness\" is not under net."},
		{name: "empty sysctl value", spec: Spec{ServerSysctls: []Sysctl{sc("net.ipv4.tcp_rmem=")}}, wantErr: "empty value"},
		{name: "duplicate sysctl", spec: Spec{ClientSysctls: []Sysctl{sc("net.ipv4.tcp_sack=1"), sc("net/ipv4/tcp_sack=0")}},
			wantErr: "client sysctl net.ipv4.tcp_sack: key set twice"},
		{name: "sysctl conflicts with cc", spec: Spec{CC: "bbr", ClientSysctls: []Sysctl{sc("net.ipv4.tcp_congestion_control=reno")}},
			wantErr: `conflicts with CC "bbr"`},
		{name: "bad cc", spec: Spec{CC: "bbr;reno"}, wantErr: `congestion control "bbr;reno": character ';' is not allowed`},
		{name: "star path", spec: Spec{JoinClient: "lh-0123456789-c", Dev: "lh3"}},
		{name: "bad device", spec: Spec{Dev: "lh-0"}, wantErr: `device name "lh-0": up to 15 letters and digits`},
		{name: "long device", spec: Spec{Dev: "abcdefghijklmnop"}, wantErr: "up to 15 letters"},
		{name: "joined client with veth", spec: Spec{JoinClient: "x", Veth: true}, wantErr: "takes no veth pair"},
		{name: "joined client with cpu", spec: Spec{JoinClient: "x", ClientCPU: 1}, wantErr: "no CPU limit of its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want one containing %q", err, tt.wantErr)
			}
			checkOneLine(t, err)
		})
	}
}

func TestWithDefaults(t *testing.T) {
	want := Spec{Prefix: "lh", ClientAddr: netip.MustParseAddr("198.18.0.1"), ServerAddr: netip.MustParseAddr("198.18.0.2"),
		MTU: 1500, TxQueueLen: 10000, Dev: "lh0"}
	if diff := cmp.Diff(want, Spec{}.WithDefaults(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("WithDefaults (-want +got):\n%s", diff)
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		user []Sysctl
		cc   string
		want []Sysctl
	}{
		{name: "defaults only", want: []Sysctl{
			{Key: "net.ipv4.tcp_no_metrics_save", Value: "1"}, {Key: "net.ipv6.conf.lh0.disable_ipv6", Value: "1"}}},
		{name: "cc and user list in order", cc: "reno",
			user: []Sysctl{{Key: "net/ipv4/tcp_rmem", Value: " 1 2 3 "}, {Key: "net.ipv4.tcp_sack", Value: "0"}},
			want: []Sysctl{{Key: "net.ipv4.tcp_no_metrics_save", Value: "1"}, {Key: "net.ipv6.conf.lh0.disable_ipv6", Value: "1"},
				{Key: "net.ipv4.tcp_congestion_control", Value: "reno"}, {Key: "net.ipv4.tcp_rmem", Value: "1 2 3"}, {Key: "net.ipv4.tcp_sack", Value: "0"}}},
		{name: "user overrides a default in place",
			user: []Sysctl{{Key: "net.ipv4.tcp_no_metrics_save", Value: "0"}},
			want: []Sysctl{{Key: "net.ipv4.tcp_no_metrics_save", Value: "0"}, {Key: "net.ipv6.conf.lh0.disable_ipv6", Value: "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, plan(tt.user, tt.cc, false, DevName)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// statLine builds a /proc/PID/stat line with the given command name,
// state and start time (field 22); the other fields are filler.
func statLine(comm string, state byte, start uint64) string {
	f := []string{"4242", "(" + comm + ")", string(state)}
	for i := 4; i <= 52; i++ {
		v := fmt.Sprint(i)
		if i == 22 {
			v = fmt.Sprint(start)
		}
		f = append(f, v)
	}
	return strings.Join(f, " ") + "\n"
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr string
	}{
		{name: "plain", in: statLine("sleep", 'S', 123456), want: procStat{'S', 123456}},
		{name: "name with spaces and parens", in: statLine("a) R 1 (b", 'R', 7), want: procStat{'R', 7}},
		{name: "zombie", in: statLine("ping", 'Z', 99), want: procStat{'Z', 99}},
		{name: "truncated", in: "4242 (x) S 1 2 3", wantErr: "fields"},
		{name: "no command", in: "4242 x S", wantErr: "no command name"},
		{name: "bad start", in: strings.Replace(statLine("x", 'S', 5), " 5 23 ", " five 23 ", 1), wantErr: "bad start time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(procStat{})); diff != "" {
				t.Errorf("parseProcStat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNamesFor(t *testing.T) {
	rn := namesFor("lh")
	tests := []struct {
		name, in string
		wantNS   bool
		wantSt   bool
	}{
		{name: "client", in: "lh-0123456789-c", wantNS: true},
		{name: "server", in: "lh-abcdef0123-s", wantNS: true},
		{name: "state file", in: "lh-abcdef0123.json", wantSt: true},
		{name: "other prefix", in: "lhx-0123456789-c"},
		{name: "prefix with dash", in: "lh-x-0123456789-c"},
		{name: "short id", in: "lh-012345678-c"},
		{name: "uppercase id", in: "lh-ABCDEF0123-c"},
		{name: "other side", in: "lh-0123456789-m"},
		{name: "temporary state", in: "lh-abcdef0123.json.tmp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rn.ns.MatchString(tt.in); got != tt.wantNS {
				t.Errorf("namespace pattern matches %q = %v, want %v", tt.in, got, tt.wantNS)
			}
			if got := rn.state.MatchString(tt.in); got != tt.wantSt {
				t.Errorf("state pattern matches %q = %v, want %v", tt.in, got, tt.wantSt)
			}
		})
	}
}

func checkOneLine(t *testing.T, err error) {
	t.Helper()
	if s := err.Error(); strings.Contains(s, "\n") {
		t.Errorf("error is not one line: %q", s)
	}
}

func TestSpecIPv6(t *testing.T) {
	s := Spec{IPv6: true}.WithDefaults()
	if s.ClientAddr6 != DefaultClientAddr6 || s.ServerAddr6 != DefaultServerAddr6 || s.Validate() != nil {
		t.Errorf("defaults %v %v: %v", s.ClientAddr6, s.ServerAddr6, s.Validate())
	}
	if s := (Spec{}).WithDefaults(); s.ClientAddr6.IsValid() {
		t.Errorf("an IPv4-only spec got IPv6 address %v", s.ClientAddr6)
	}
	for name, bad := range map[string]Spec{
		"outside the prefix": {IPv6: true, ClientAddr6: netip.MustParseAddr("2001:db8::1")},
		"same address":       {IPv6: true, ClientAddr6: DefaultServerAddr6},
		"v4 as v6":           {IPv6: true, ServerAddr6: netip.MustParseAddr("::ffff:198.18.0.2")},
		"mtu below 1280":     {IPv6: true, MTU: 1200},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	got := map[string]string{}
	for _, sc := range plan(nil, "", true, DevName) {
		got[sc.Key] = sc.Value
	}
	conf := "net.ipv6.conf." + DevName + "."
	for k, v := range map[string]string{conf + "disable_ipv6": "0", conf + "addr_gen_mode": "1", conf + "accept_dad": "0", conf + "accept_ra": "0", conf + "router_solicitations": "0"} {
		if got[k] != v {
			t.Errorf("plan with IPv6: %s = %q, want %q", k, got[k], v)
		}
	}
}
