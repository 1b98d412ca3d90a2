package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/cli"
)

// TestPages: one page per command in the tree, named as man(1) finds
// them, carrying the command's flags, reproducible, and readable by man.
func TestPages(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1790000000")
	if err := run(dir, "9.9.9"); err != nil {
		t.Fatal(err)
	}
	want := []string{"longhaul.1"}
	for _, c := range cli.Command().Commands() {
		if c.IsAvailableCommand() {
			want = append(want, "longhaul-"+c.Name()+".1")
		}
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("no page %s: %v", name, err)
		}
	}
	plan, err := os.ReadFile(filepath.Join(dir, "longhaul-plan.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`.TH "LONGHAUL" "1"`, "longhaul 9.9.9", `\fB--emit\fP`, `\fB--from\fP`, "Sep 2026"} {
		if !strings.Contains(string(plan), s) {
			t.Errorf("longhaul-plan.1 lacks %q", s)
		}
	}
	// The sections cobra does not write, before SEE ALSO, with what the
	// code does.
	for _, name := range want {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		page := string(b)
		exit, env, see := strings.Index(page, ".SH EXIT STATUS"), strings.Index(page, ".SH ENVIRONMENT"), strings.Index(page, ".SH SEE ALSO")
		if exit < 0 || env < exit || (see >= 0 && see < env) {
			t.Errorf("%s: EXIT STATUS at %d, ENVIRONMENT at %d, SEE ALSO at %d", name, exit, env, see)
		}
	}
	for name, wants := range map[string][]string{
		"longhaul.1":         {"\\fB3\\fP", "\\fB4\\fP", "\\fB5\\fP", "\\fB130, 143\\fP", ".SH FILES", "/var/lib/longhaul/journal", "/run/longhaul"},
		"longhaul-apply.1":   {".SH FILES", "/var/lib/longhaul/journal", "/etc/sysctl.d/90\\-longhaul.conf", "needs root"},
		"longhaul-emulate.1": {"LONGHAUL_SERVER", "\\fB5\\fP", "/run/netns"},
		"longhaul-audit.1":   {"\\fB3\\fP", "\\fB4\\fP", "/proc/sys/net"},
		"longhaul-serve.1":   {"a clean stop on SIGINT or SIGTERM", "/etc/longhaul/token"},
	} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "longhaul-calc.1")); strings.Contains(string(b), "\\fB5\\fP") || strings.Contains(string(b), ".SH FILES") {
		t.Error("longhaul-calc.1 documents emulate's exit status 5 or files it does not use")
	}
	again := t.TempDir()
	if err := run(again, "9.9.9"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(again, "longhaul-plan.1")); string(b) != string(plan) {
		t.Error("two runs wrote different pages")
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man not installed")
	}
	out, err := exec.Command("man", "-l", filepath.Join(dir, "longhaul-audit.1")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--against") {
		t.Errorf("man -l longhaul-audit.1: %v\n%s", err, out)
	}
}
