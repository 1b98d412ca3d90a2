package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/emit"
)

// TestPlanEmit: --emit renders the plan it makes (or --from reads) with
// internal/emit, byte for byte; -o still saves the JSON beside it.
func TestPlanEmit(t *testing.T) {
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	args := []string{"plan", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "--app-buffers"}
	for _, f := range emit.Formats() {
		switch f.Name {
		case "networkd", "nm", "nmstate":
			continue // route-only: refused for a plan without --dst (TestPlanEmitUsage)
		}
		t.Run(f.Name, func(t *testing.T) {
			out := planMustRun(t, append(args, "--emit", f.Name, "-o", planFile)...)
			p, err := readPlan(context.Background(), planFile)
			if err != nil {
				t.Fatal(err)
			}
			want, err := emit.Render(p, f.Name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("plan --emit %s (-render +cli):\n%s", f.Name, diff)
			}
			if from := planMustRun(t, "plan", "--from", planFile, "--emit", f.Name); from != out {
				t.Errorf("plan --from --emit %s differs from plan --emit", f.Name)
			}
		})
	}
}

func TestPlanEmitUsage(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "plan.json")
	planMustRun(t, "plan", "--root", hosts+"ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "-o", plan)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown format", []string{"plan", "--from", plan, "--emit", "puppet"}, `unknown format "puppet"`},
		{"from without emit", []string{"plan", "--from", plan}, "give the format with --emit"},
		{"emit and json", []string{"plan", "--from", plan, "--emit", "tuned", "--json"}, "--emit and --json"},
		{"from with a path flag", []string{"plan", "--from", plan, "--emit", "tuned", "--rtt", "10ms"}, "--rtt does not go with it"},
		{"nmstate without the interface", []string{"plan", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "--role", "server", "--dst", "203.0.113.0/24", "--emit", "nmstate"}, "nmstate needs the route's interface"},
		{"networkd without --dst", []string{"plan", "--from", plan, "--emit", "networkd"}, "plan with --dst HOST"},
		{"nm without --dst", []string{"plan", "--from", plan, "--emit", "nm"}, "plan with --dst HOST"},
		{"not a plan", []string{"plan", "--from", hosts + "ubuntu-2004/proc/sys/net/ipv4/tcp_rmem", "--emit", "tuned"}, "is not a plan file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, tc.args...)
			var errOut strings.Builder
			if code := ExitCode(err, &errOut); code != exitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q, want exit 2 and no output", code, out)
			}
			if msg := errOut.String(); !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q, want one line containing %q", msg, tc.want)
			}
		})
	}
}

// TestAuditAgainst: audit --against exits 0 on a host that has the plan's
// values, 4 naming exactly the drifted keys when one was changed behind
// the plan's back (here: a tab-separated tcp_rmem of the same value stays
// as planned).
func TestAuditAgainst(t *testing.T) {
	root := planCopyHost(t, "ubuntu-2004")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	planMustRun(t, "plan", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile)

	out, _, err := run(t, "audit", "--root", root, "--against", planFile)
	var errOut strings.Builder
	if code := ExitCode(err, &errOut); code != exitDrift || !strings.Contains(out, "DRIFTED net.ipv4.tcp_rmem") {
		t.Fatalf("before apply: exit %d, want 4:\n%s", code, out)
	}
	planMustRun(t, "apply", planFile, "--root", root)
	out = planMustRun(t, "audit", "--root", root, "--against", planFile)
	if !strings.Contains(out, "Summary: 0 drifted, 4 as planned") {
		t.Errorf("after apply:\n%s", out)
	}

	rmem := filepath.Join(root, "proc/sys/net/ipv4/tcp_rmem")
	b, _ := os.ReadFile(rmem)
	if err := os.WriteFile(rmem, []byte(strings.ReplaceAll(string(b), " ", "\t")), 0o644); err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(root, "proc/sys/net/ipv4/tcp_slow_start_after_idle")
	if err := os.WriteFile(slow, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "audit", "--root", root, "--against", planFile, "--json")
	errOut.Reset()
	if code := ExitCode(err, &errOut); code != exitDrift {
		t.Fatalf("after a drift: exit %d, want 4", code)
	}
	if want := "longhaul: audit: 1 key(s) drifted from " + planFile + ": net.ipv4.tcp_slow_start_after_idle\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	var doc struct {
		Schema  string `json:"schema"`
		Drifted int    `json:"drifted"`
		Checks  []struct {
			Key, Want, Have, Status string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "longhaul.drift/v1" || doc.Drifted != 1 || len(doc.Checks) != 4 {
		t.Fatalf("json: %+v", doc)
	}
	for _, c := range doc.Checks {
		if (c.Status == "drifted") != (c.Key == "net.ipv4.tcp_slow_start_after_idle") {
			t.Errorf("%+v", c)
		}
	}
	if _, _, err := run(t, "audit", "--against", planFile, "--rtt", "1s", "--rate", "1Gbit/s"); ExitCode(err, &errOut) != exitUsage {
		t.Error("--against with --rtt: want exit 2")
	}
}
