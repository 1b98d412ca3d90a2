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
)

const deployDir = "../../deploy"

// The alert rules load and their unit tests pass (promtool from Debian's
// prometheus package).
func TestDeployAlertRules(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (make deps installs it)")
	}
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "longhaul-rules.yml"},
		{"test", "rules", "longhaul-rules.test.yml"},
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
	for _, f := range []string{"prometheus/longhaul-rules.yml", "prometheus/longhaul-rules.test.yml", "grafana/longhaul-dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range metricName.FindAllString(string(b), -1) {
			if !slices.Contains(have, n) {
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
