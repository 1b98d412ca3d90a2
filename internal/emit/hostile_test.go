package emit

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysconf"
)

// hostile are values a far host controls in the documented pipeline
// (ssh far longhaul audit --json | longhaul plan --snapshot -) or that a
// hand-edited plan holds.
var hostile = map[string]string{
	"newline":      "ok\nkernel.core_pattern=|/tmp/x",
	"quote":        `ok" : pwned`,
	"pipe":         "ok|sh",
	"subshell":     "ok$(reboot)",
	"backtick":     "ok`id`",
	"yaml doc":     "ok\n---\n- hosts: all",
	"ini section":  "ok\n[main]",
	"nul":          "ok\x00x",
	"100 KB":       strings.Repeat("a", 100<<10),
	"unicode line": "ok\u2028x",
}

// hostileNumbers are values a plan may hold that read as other numbers
// than they look: the kernel reads "0010" as octal 8, and neither "0005"
// nor "+5" is what it prints back. Every format refuses them in a value
// (they are plain words in a host name).
var hostileNumbers = map[string]string{
	"0005":          "0005",
	"+5":            "+5",
	"leading zeros": "4096 131072 0010",
	"hex":           "0x10",
	"minus zero":    "-0",
}

// hostileFor is what field must be refused with.
func hostileFor(field string) map[string]string {
	if field != "value" && field != "current" {
		return hostile
	}
	all := maps.Clone(hostile)
	maps.Copy(all, hostileNumbers)
	return all
}

// The fields of a plan each format writes, and how to set one.
var fields = map[string]func(p *plan.Plan, v string){
	"host":    func(p *plan.Plan, v string) { p.Host = v },
	"kernel":  func(p *plan.Plan, v string) { p.Kernel = v },
	"netns":   func(p *plan.Plan, v string) { p.Netns = v },
	"role":    func(p *plan.Plan, v string) { p.Path.Role = plan.Role(v) },
	"key":     func(p *plan.Plan, v string) { firstSysctl(p).Key = v },
	"value":   func(p *plan.Plan, v string) { firstSysctl(p).New = v },
	"current": func(p *plan.Plan, v string) { firstSysctl(p).Current = v },
	"dev":     func(p *plan.Plan, v string) { firstRoute(p).Dev = v },
	"gateway": func(p *plan.Plan, v string) { firstRoute(p).Gateway = v },
	"dst":     func(p *plan.Plan, v string) { firstRoute(p).Dst = v },
}

func firstSysctl(p *plan.Plan) *plan.Item {
	for i := range p.Items {
		if p.Items[i].Kind == plan.KindSysctl {
			return &p.Items[i]
		}
	}
	panic("fixture without a sysctl")
}

func firstRoute(p *plan.Plan) *plan.Route {
	for i := range p.Items {
		if p.Items[i].Route != nil {
			return p.Items[i].Route
		}
	}
	panic("fixture without a route")
}

// Every format refuses a plan holding a hostile value in any field it
// writes, with one short line (exit 2: bad input), and writes nothing.
func TestHostileFieldsAreRefused(t *testing.T) {
	for field, set := range fields {
		for name, v := range hostileFor(field) {
			p := loadPlan(t, "fleet.json")
			set(&p, v)
			for _, f := range Formats() {
				out, err := Render(p, f.Name)
				if err == nil || !badinput.Is(err) {
					t.Errorf("%s %s in --emit %s: err %v; wrote:\n%.300s", field, name, f.Name, err, out)
					continue
				}
				if msg := err.Error(); strings.ContainsAny(msg, "\n\r\x00") || len(msg) > 400 {
					t.Errorf("%s %s in --emit %s: error of %d bytes or broken over lines: %.200q", field, name, f.Name, len(msg), msg)
				}
				if out != nil {
					t.Errorf("%s %s in --emit %s: %d bytes rendered besides the error", field, name, f.Name, len(out))
				}
			}
		}
	}
}

// What real plans hold still passes: interface names with dots, dashes
// and '@', kernel releases with '+' and '~', values as the kernel prints
// them (tabs).
func TestOrdinaryFieldsPass(t *testing.T) {
	p := loadPlan(t, "fleet.json")
	p.Host = "web-01.fra1.example_net"
	p.Kernel = "6.1.0-27-amd64+rt~bpo12"
	firstSysctl(&p).New = "4096\t131072\t62914560"
	firstRoute(&p).Dev = "bond0.100"
	for _, f := range Formats() {
		if _, err := Render(p, f.Name); err != nil {
			t.Errorf("--emit %s: %v", f.Name, err)
		}
	}
	firstRoute(&p).Dev = "veth@if7"
	if _, err := Render(p, "networkd"); err != nil {
		t.Errorf("interface veth@if7: %v", err)
	}
}

// What sysctl.d carries reads back, as systemd-sysctl would read it, as
// exactly the plan's settings: no line more, no problem line.
func TestSysctlDReadsBackAsThePlan(t *testing.T) {
	for _, fixture := range []string{"fleet.json", "client-dst.json"} {
		p := loadPlan(t, fixture)
		out, err := Render(p, "sysctl.d")
		if err != nil {
			t.Fatal(err)
		}
		as, probs := sysconf.ParseSysctlFile("99-longhaul.conf", bytes.NewReader(out))
		if len(probs) > 0 {
			t.Errorf("%s: lines sysctl would not take: %v", fixture, probs)
		}
		got := map[string]string{}
		for _, a := range as {
			got[a.Key] = a.Value
		}
		want := map[string]string{}
		for _, s := range Sysctls(p) {
			want[s.Key] = s.Value
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: sysctl.d read back (-plan +file):\n%s", fixture, diff)
		}
	}
}
