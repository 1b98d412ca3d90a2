//go:build linux

package exporter

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/longhaul/longhaul/internal/probe"
)

const deployDir = "../../deploy"

// The alert rules load and their unit tests pass (promtool from Debian's
// prometheus package).
func TestDeployAlertRules(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (make deps installs it)")
	}
	dir := filepath.Join(deployDir, "prometheus")
	tests, _ := filepath.Glob(filepath.Join(dir, "*.test.yml"))
	if len(tests) < 2 {
		t.Fatalf("rule tests: %v", tests)
	}
	for i := range tests {
		tests[i] = filepath.Base(tests[i])
	}
	// The scrape jobs as shipped: a fragment that passes as it is. Then
	// merged as a team would: under a prometheus.yml of its own (global:,
	// rule_files:), the file_sd examples where the jobs look for them
	// (promtool reads them), the authorization blocks uncommented with a
	// token file in place.
	tmp := t.TempDir()
	abs, _ := filepath.Abs(dir)
	for dst, src := range map[string]string{"longhaul-probe-targets/example.yml": "longhaul-probe-targets.example.yml",
		"longhaul-probe-targets/partial.yml": "longhaul-probe-targets.partial.example.yml",
		"longhaul-probe-targets/hub.yml":     "longhaul-probe-targets.hub.example.yml",
		"longhaul-exporters/example.yml":     "longhaul-exporters.example.yml", "longhaul-exporter-token": ""} {
		b := []byte("token\n")
		if src != "" {
			var err error
			if b, err = os.ReadFile(filepath.Join(dir, src)); err != nil {
				t.Fatal(err)
			}
		}
		_ = os.MkdirAll(filepath.Dir(filepath.Join(tmp, dst)), 0o755)
		if err := os.WriteFile(filepath.Join(tmp, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	frag, err := os.ReadFile(filepath.Join(dir, "longhaul-probes.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(frag), "\nglobal:") || strings.Contains(string(frag), "\nrule_files:") {
		t.Error("longhaul-probes.yml carries its own global: or rule_files: (it is merged into a team's prometheus.yml)")
	}
	const commented, auth = "    # authorization:\n    #   credentials_file:", "    authorization:\n      credentials_file:"
	if n := strings.Count(string(frag), commented); n != 2 {
		t.Fatalf("longhaul-probes.yml: %d commented authorization blocks, want one per job: update the test", n)
	}
	merged := "global:\n  evaluation_interval: 1m\nrule_files:\n  - " + filepath.Join(abs, "longhaul-rules.yml") + "\n" +
		strings.ReplaceAll(string(frag), commented, auth)
	if err := os.WriteFile(filepath.Join(tmp, "prometheus.yml"), []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "rules", "longhaul-rules.yml"},
		append([]string{"test", "rules"}, tests...),
		{"check", "config", "longhaul-probes.yml"},
		{"check", "config", filepath.Join(tmp, "prometheus.yml")},
	} {
		cmd := exec.Command("promtool", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

var metricName = regexp.MustCompile(`\blonghaul_[a-z_]+\b`)

// Every longhaul_ metric the rules and the dashboard use is one the
// exporter exports, and the dashboard is JSON Grafana can import.
func TestDeployNamesExist(t *testing.T) {
	have := names(NewCollector(NewTracker(Config{MaxSeries: 2000})))
	have = append(have, "longhaul_exporter_scrape_duration_seconds")
	have = append(have, names(probe.New(probe.Config{}))...)
	for _, f := range []string{"prometheus/longhaul-rules.yml", "prometheus/longhaul-rules.test.yml", "grafana/longhaul-dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range metricName.FindAllString(string(b), -1) {
			// A probe's own metrics are checked in package probe.
			if !slices.Contains(have, n) && !strings.HasPrefix(n, "longhaul_probe_") {
				t.Errorf("%s uses %s, which the exporter does not export", f, n)
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(deployDir, "grafana/longhaul-dashboard.json"))
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil || dash.UID == "" || len(dash.Panels) < 8 {
		t.Errorf("dashboard: %v, uid %q, %d panels", err, dash.UID, len(dash.Panels))
	}
}

// systemd accepts the unit (with the binary path pointed at one that
// exists here).
func TestDeploySystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	b, err := os.ReadFile(filepath.Join(deployDir, "systemd", "longhaul-exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(b), "/usr/bin/longhaul", "/bin/true")
	unit = regexp.MustCompile(`(?m)^Documentation=.*\n`).ReplaceAllString(unit, "")
	path := filepath.Join(t.TempDir(), "longhaul-exporter.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// Every dashboard loads in Grafana's dashboard schema (v1, the JSON
// model): its types from grafana-foundation-sdk, generated from
// Grafana's schema, decoded strictly (unknown or missing required fields
// fail) and validated, panel options included. __inputs and __requires
// are the import format's metadata, which Grafana strips on import.
func TestDeployDashboardsSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	files, _ := filepath.Glob(filepath.Join(deployDir, "grafana", "*.json"))
	if len(files) < 2 {
		t.Fatalf("dashboards: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		delete(m, "__inputs")
		delete(m, "__requires")
		b, _ = json.Marshal(m)
		var d dashboard.Dashboard
		if err := sdkErr(d.UnmarshalJSONStrict(b)); err != nil {
			t.Errorf("%s does not fit Grafana's dashboard schema:\n%v", f, err)
			continue
		}
		if err := sdkErr(d.Validate()); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if len(d.Panels) < 8 {
			t.Errorf("%s: %d panels", f, len(d.Panels))
		}
	}
}

// sdkErr is nil for the SDK's empty error list (it returns a typed nil
// cog.BuildErrors when all is well).
func sdkErr(err error) error {
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
		return nil
	}
	return err
}
