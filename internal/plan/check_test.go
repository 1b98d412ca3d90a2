package plan

import (
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

// checkPlan is a plan as longhaul makes one: sysctls of both scopes, a
// route, an application's advice.
func checkPlan() Plan {
	return Plan{Schema: Schema, Kernel: "6.1.0", Items: []Item{
		{Key: "net.ipv4.tcp_rmem", Kind: KindSysctl, Scope: ScopeNetns, New: "4096 131072 62914560"},
		{Key: "net.core.rmem_max", Kind: KindSysctl, Scope: ScopeHost, New: "33554432"},
		{Key: "net.ipv4.tcp_no_metrics_save", Kind: KindSysctl, Scope: ScopeNetns, New: "1"},
		{Key: "route default", Kind: KindRoute, Route: &Route{Family: "inet", Dst: "default", InitCwnd: 20}},
		{Key: "app SO_RCVBUF", Kind: KindApp, New: "leave unset"},
	}}
}

// A plan's keys, values, routes and kernel are checked before a report
// prints them: a 100 KB key, a key with a newline (it forged an "OK"
// line), escape codes, numbers the kernel reads otherwise. The refusal
// is one short line, bad input.
func TestCheckFields(t *testing.T) {
	if err := CheckFields(checkPlan()); err != nil {
		t.Fatalf("a plan longhaul wrote: %v", err)
	}
	for name, spoil := range map[string]func(p *Plan){
		"100 KB key":       func(p *Plan) { p.Items[0].Key = "net." + strings.Repeat("a", 100<<10) },
		"newline in key":   func(p *Plan) { p.Items[0].Key = "net.ipv4.x\nOK      net.ipv4.tcp_rmem" },
		"escape in key":    func(p *Plan) { p.Items[0].Key = "net.\x1b[2Jx" },
		"newline in value": func(p *Plan) { p.Items[1].New = "1\nOK      net.core.rmem_max" },
		"escape in value":  func(p *Plan) { p.Items[1].New = "1\x1b[1A" },
		"100 KB value":     func(p *Plan) { p.Items[1].New = strings.Repeat("1", 100<<10) },
		"leading zeros":    func(p *Plan) { p.Items[0].New = "4096 131072 0010" },
		"plus sign":        func(p *Plan) { p.Items[1].New = "+5" },
		"route to a line":  func(p *Plan) { p.Items[3].Route.Dst = "default\nOK route" },
		"route family":     func(p *Plan) { p.Items[3].Route.Family = "inet\n" },
		"kernel newline":   func(p *Plan) { p.Kernel = "6.1.0\nNote: fine" },
	} {
		p := checkPlan()
		spoil(&p)
		err := CheckFields(p)
		if err == nil || !badinput.Is(err) {
			t.Errorf("%s: %v, want bad input", name, err)
			continue
		}
		if msg := err.Error(); len(msg) > 200 || strings.ContainsAny(msg, "\n\x1b") {
			t.Errorf("%s: error of %d bytes or with control characters: %.200q", name, len(msg), msg)
		}
	}
}
