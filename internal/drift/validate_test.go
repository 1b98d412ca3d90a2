package drift

import (
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
)

// A plan's keys, values, routes and kernel are checked before a report
// prints them: a 100 KB key, a key with a newline (it forged an "OK"
// line), escape codes, numbers the kernel reads otherwise. The refusal
// is one short line, bad input.
func TestValidate(t *testing.T) {
	if err := Validate(testPlan()); err != nil {
		t.Fatalf("a plan longhaul wrote: %v", err)
	}
	for name, spoil := range map[string]func(p *plan.Plan){
		"100 KB key":       func(p *plan.Plan) { p.Items[0].Key = "net." + strings.Repeat("a", 100<<10) },
		"newline in key":   func(p *plan.Plan) { p.Items[0].Key = "net.ipv4.x\nOK      net.ipv4.tcp_rmem" },
		"escape in key":    func(p *plan.Plan) { p.Items[0].Key = "net.\x1b[2Jx" },
		"newline in value": func(p *plan.Plan) { p.Items[1].New = "1\nOK      net.core.rmem_max" },
		"escape in value":  func(p *plan.Plan) { p.Items[1].New = "1\x1b[1A" },
		"100 KB value":     func(p *plan.Plan) { p.Items[1].New = strings.Repeat("1", 100<<10) },
		"leading zeros":    func(p *plan.Plan) { p.Items[0].New = "4096 131072 0010" },
		"plus sign":        func(p *plan.Plan) { p.Items[1].New = "+5" },
		"route to a line":  func(p *plan.Plan) { p.Items[3].Route.Dst = "default\nOK route" },
		"route family":     func(p *plan.Plan) { p.Items[3].Route.Family = "inet\n" },
		"kernel newline":   func(p *plan.Plan) { p.Kernel = "6.1.0\nNote: fine" },
	} {
		p := testPlan()
		spoil(&p)
		err := Validate(p)
		if err == nil || !badinput.Is(err) {
			t.Errorf("%s: %v, want bad input", name, err)
			continue
		}
		if msg := err.Error(); len(msg) > 200 || strings.ContainsAny(msg, "\n\x1b") {
			t.Errorf("%s: error of %d bytes or with control characters: %.200q", name, len(msg), msg)
		}
	}
}
