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
