package rtnl

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCoveringRoute(t *testing.T) {
	routes := []Route{
		{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Table: 254},
		{Family: "inet", Dst: "203.0.0.0/8", Gateway: "10.0.0.2", Table: 254},
		{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.3", Table: 100},
		{Family: "inet6", Dst: "default", Gateway: "fe80::1", Table: 254},
		{Family: "inet", Dst: "198.51.100.9", Gateway: "10.0.0.4", Table: 254},
	}
	tests := []struct {
		family, dst, want string
	}{
		{"inet", "203.0.113.0/24", "10.0.0.2"}, // table 100 is not main
		{"inet", "192.0.2.0/24", "10.0.0.1"},
		{"inet", "203.0.0.0/7", "10.0.0.1"}, // wider than 203/8
		{"inet", "198.51.100.9/32", "10.0.0.4"},
		{"inet6", "2001:db8::/32", "fe80::1"},
	}
	for _, tc := range tests {
		r, ok := CoveringRoute(routes, tc.family, netip.MustParsePrefix(tc.dst))
		if !ok || r.Gateway != tc.want {
			t.Errorf("CoveringRoute(%s) = %+v, %v; want via %s", tc.dst, r, ok, tc.want)
		}
	}
	if r, ok := FindRoute(routes, "inet", "198.51.100.9/32"); !ok || r.Gateway != "10.0.0.4" {
		t.Errorf("FindRoute host route: %+v %v", r, ok)
	}
}

func TestRoutePrefix(t *testing.T) {
	tests := []struct {
		name    string
		r       Route
		want    string
		wantErr string
	}{
		{name: "default inet", r: Route{Family: "inet", Dst: "default"}, want: "0.0.0.0/0"},
		{name: "default inet6", r: Route{Family: "inet6", Dst: "default"}, want: "::/0"},
		{name: "default without family", r: Route{Dst: "default"}, want: "0.0.0.0/0"},
		{name: "prefix is masked", r: Route{Family: "inet", Dst: "203.0.113.7/24"}, want: "203.0.113.0/24"},
		{name: "host route without length", r: Route{Family: "inet", Dst: "198.51.100.9"}, want: "198.51.100.9/32"},
		{name: "inet6 host route", r: Route{Family: "inet6", Dst: "2001:db8::1"}, want: "2001:db8::1/128"},
		{name: "not a prefix", r: Route{Family: "inet", Dst: "example.net"},
			wantErr: `route destination "example.net": want a prefix such as 203.0.113.0/24, or default`},
		{name: "wrong family", r: Route{Family: "inet", Dst: "2001:db8::/32"},
			wantErr: "route destination 2001:db8::/32 is not of family inet"},
		{name: "inet6 family, inet prefix", r: Route{Family: "inet6", Dst: "203.0.113.0/24"},
			wantErr: "route destination 203.0.113.0/24 is not of family inet6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.r.Prefix()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Prefix() = %v, %v; want error %q", p, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.String()); diff != "" {
				t.Errorf("Prefix() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRouteText(t *testing.T) {
	tests := []struct {
		name             string
		r                Route
		str, via, metric string
	}{
		{name: "default via gateway", r: Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254},
			str: "default via 10.0.0.1 dev eth0", via: " via 10.0.0.1 dev eth0", metric: "initcwnd/initrwnd unset"},
		{name: "table 0 is main", r: Route{Family: "inet", Dst: "10.0.0.0/24", Dev: "eth0", InitCwnd: 20},
			str: "10.0.0.0/24 dev eth0", via: " dev eth0", metric: "initcwnd 20"},
		{name: "other table", r: Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.2", Table: 100, InitCwnd: 20, InitRwnd: 30},
			str: "203.0.113.0/24 via 10.0.0.2 table 100", via: " via 10.0.0.2", metric: "initcwnd 20 initrwnd 30"},
		{name: "only initrwnd", r: Route{Family: "inet6", Dst: "default", InitRwnd: 40},
			str: "default", via: "", metric: "initrwnd 40"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{tc.r.String(), tc.r.Via(), tc.r.MetricsText()}
			if diff := cmp.Diff([]string{tc.str, tc.via, tc.metric}, got); diff != "" {
				t.Errorf("String, Via, MetricsText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultRoutes(t *testing.T) {
	st := State{Routes: []Route{
		{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Table: 254},
		{Family: "inet", Dst: "default", Gateway: "10.0.0.9", Table: 100},
		{Family: "inet6", Dst: "default", Gateway: "fe80::1"},
		{Family: "inet", Dst: "10.0.0.0/24", Table: 254},
	}}
	want := []Route{st.Routes[0], st.Routes[2]}
	if diff := cmp.Diff(want, st.DefaultRoutes()); diff != "" {
		t.Errorf("DefaultRoutes (-want +got):\n%s", diff)
	}
}
