package emit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysconf"
	"go.yaml.in/yaml/v3"
)

// Fixture plans, made with longhaul plan -o from testdata/hosts/ubuntu-2004:
// fleet.json (4 flows, --app-buffers, --dst default on a snapshot with
// routes), client-dst.json (one receiving flow, no route), root-dst.json
// (--root: a route item without its interface).
func loadPlan(t *testing.T, name string) plan.Plan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGolden(t *testing.T) {
	for _, fixture := range []string{"fleet", "client-dst"} {
		p := loadPlan(t, fixture+".json")
		for _, f := range Formats() {
			name := fixture + "." + f.Name
			t.Run(name, func(t *testing.T) {
				got, err := Render(p, f.Name)
				if err != nil {
					// A format that cannot carry the plan: the golden file
					// holds the one-line refusal (exit 2).
					if !badinput.Is(err) {
						t.Fatal(err)
					}
					got = []byte("refused: " + err.Error() + "\n")
				}
				golden.Check(t, filepath.Join("testdata", "golden", name+".golden"), name, got)
			})
		}
	}
}

// withTabs returns p with every sysctl value written the way the kernel
// prints multi-value keys: separated by tabs.
func withTabs(p plan.Plan) plan.Plan {
	items := append([]plan.Item(nil), p.Items...)
	for i := range items {
		if items[i].Kind == plan.KindSysctl {
			items[i].New = strings.ReplaceAll(items[i].New, " ", "\t")
		}
	}
	p.Items = items
	return p
}

// TestNormalizedValues: a plan whose values carry tabs (read back from
// /proc/sys) renders exactly like one with spaces, in every format, so
// re-emitting and re-applying never shows a change.
func TestNormalizedValues(t *testing.T) {
	p := loadPlan(t, "fleet.json")
	tabbed := withTabs(p)
	if tabbed.Items[0].New == p.Items[0].New {
		t.Fatal("fixture: the first item has no multi-value key")
	}
	for _, f := range Formats() {
		a, err1 := Render(p, f.Name)
		b, err2 := Render(tabbed, f.Name)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", f.Name, err1, err2)
		}
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Errorf("%s: tabs change the output (-spaces +tabs):\n%s", f.Name, diff)
		}
		if bytes.Contains(b, []byte("\t")) {
			t.Errorf("%s: output has a tab", f.Name)
		}
	}
}

// TestSysctlDRoundTrip: the sysctl.d output parsed the way systemd-sysctl
// reads it (sysconf) gives exactly the plan's keys and values.
func TestSysctlDRoundTrip(t *testing.T) {
	p := loadPlan(t, "fleet.json")
	out, err := Render(p, "sysctl.d")
	if err != nil {
		t.Fatal(err)
	}
	as, problems := sysconf.ParseSysctlFile("90-longhaul.conf", bytes.NewReader(out))
	if len(problems) > 0 {
		t.Fatalf("lines systemd-sysctl would not take: %q", problems)
	}
	got := map[string]string{}
	for _, a := range as {
		got[a.Key] = a.Value
	}
	want := map[string]string{}
	for _, s := range Sysctls(p) {
		want[s.Key] = s.Value
	}
	if len(want) != 6 {
		t.Fatalf("fixture: %d sysctls, want 6", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sysctl.d (-plan +parsed):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	p := loadPlan(t, "root-dst.json")
	tests := []struct {
		name, format string
		plan         plan.Plan
		want         string
	}{
		{"unknown format", "puppet", p, `unknown format "puppet"`},
		{"nmstate needs the interface", "nmstate", p, "nmstate needs the route's interface"},
		{"nm needs the interface", "nm", p, "does not name its interface"},
		{"not a plan", "sysctl.d", plan.Plan{Schema: "longhaul.audit/v1"}, "not a longhaul plan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.plan, tc.format)
			if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render = %v, want bad input containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	// A route without its interface is still fine where the host's own
	// configuration names it (networkd drop-in) or it is not rendered.
	for _, f := range []string{"sysctl.d", "networkd", "ansible", "tuned", "k8s", "k8s-pod"} {
		if _, err := Render(p, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// yamlDocs parses a YAML stream into generic documents.
func yamlDocs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("not YAML: %v\n%s", err, b)
		}
		docs = append(docs, d)
	}
}
