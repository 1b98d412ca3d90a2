package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// stamped builds longhaul the way make build does, with a version and a
// commit stamped in.
func stamped(t *testing.T, version, commit string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "longhaul")
	ld := "-s -w -X github.com/longhaul/longhaul/internal/cli.version=" + version + " -X github.com/longhaul/longhaul/internal/cli.commit=" + commit
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ld, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func goVersion(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: links a stamped binary (20 s on 2 cores)")
	}
	bin := stamped(t, "1.2.3", "0123456789abcdef")
	gov := goVersion(t)
	out, _, code := exe(t, bin, "version")
	want := "longhaul 1.2.3\ncommit:   0123456789abcdef\ngo:       " + gov + "\nplatform: linux/" + runtime.GOARCH + "\n"
	if code != 0 || out != want {
		t.Errorf("version: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	out, _, code = exe(t, bin, "--version")
	if code != 0 || out != "longhaul 1.2.3 (commit 0123456789abcdef, "+gov+", linux/"+runtime.GOARCH+")\n" {
		t.Errorf("--version: exit %d: %q", code, out)
	}
	out, _, _ = exe(t, bin, "version", "--json")
	var doc map[string]string
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["schema"] != "longhaul.version/v1" || doc["version"] != "1.2.3" || doc["go_version"] != gov {
		t.Errorf("version --json: %v\n%s", err, out)
	}
	// Unstamped (go build, go install): the toolchain's record stands in:
	// "dev", or the module's version where the toolchain stamped one (a
	// pseudo-version from git when go build runs with -buildvcs, as it
	// does unless GOFLAGS says -buildvcs=false).
	out, _, _ = exe(t, binary(t), "version", "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || (doc["version"] != "dev" && !strings.HasPrefix(doc["version"], "v")) || doc["commit"] == "" || doc["go_version"] != gov {
		t.Errorf("unstamped version --json: %v\n%s", err, out)
	}
}

// TestIntegrationDeb builds the package with scripts/mkdeb.sh from a
// stamped binary, generated man pages and a deploy directory holding the
// repository's units plus a fixture unit, installs it with dpkg into a
// throwaway root (dpkg --root, maintainer scripts chrootless: no chroot
// image is needed, and the postinst leaves the host's systemd alone under
// DPKG_ROOT), and uses it from there: longhaul version, man, the shell
// completions, and systemd's view of every unit (systemd-analyze --root).
// Then dpkg removes it without leftovers.
func TestIntegrationDeb(t *testing.T) {
	for _, tool := range []string{"dpkg", "dpkg-deb", "man", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/deps.sh installs it)", tool)
		}
	}
	bin := stamped(t, "v1.2.3", "0123456789abcdef")
	work := t.TempDir()
	man, deploy, out := filepath.Join(work, "man"), filepath.Join(work, "deploy"), filepath.Join(work, "deb")
	if b, err := exec.Command("go", "run", "../longhaul-man", "-o", man, "-version", "v1.2.3").CombinedOutput(); err != nil {
		t.Fatalf("man pages: %v\n%s", err, b)
	}
	// The deploy directory as in the repository (units at its top and
	// under systemd/), plus a fixture unit.
	units := map[string]string{"longhaul-fixture.service": "[Unit]\nDescription=longhaul fixture unit\n\n[Service]\nExecStart=/usr/bin/longhaul version\n"}
	paths := map[string]string{"longhaul-fixture.service": "longhaul-fixture.service"}
	repoUnits, _ := filepath.Glob("../../deploy/*.service")
	more, _ := filepath.Glob("../../deploy/systemd/*.service")
	repoUnits = append(repoUnits, more...)
	if !slices.Contains(repoUnits, "../../deploy/systemd/longhaul-exporter.service") {
		t.Fatalf("the exporter's unit is not among the repository's units %v", repoUnits)
	}
	for _, u := range repoUnits {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		units[filepath.Base(u)] = string(b)
		paths[filepath.Base(u)] = strings.TrimPrefix(u, "../../deploy/")
	}
	for name, body := range units {
		p := filepath.Join(deploy, paths[name])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk := exec.Command("scripts/mkdeb.sh")
	mk.Dir = "../.."
	mk.Env = append(os.Environ(), "COMPRESS=none", "BIN="+bin, "MAN="+man, "DEPLOY="+deploy, "OUT="+out)
	b, err := mk.Output()
	if err != nil {
		t.Fatalf("mkdeb: %v", err)
	}
	deb := strings.TrimSpace(string(b))
	if filepath.Base(deb) != "longhaul_1.2.3_"+debArch()+".deb" {
		t.Errorf("package %s", deb)
	}
	root := installDeb(t, deb)
	checkInstalled(t, root, units)
	systemctlCat(t, root, "longhaul-exporter.service")
	if b, err := exec.Command("dpkg", "--root="+root, "--force-script-chrootless", "--log=/dev/null", "--purge", "longhaul").CombinedOutput(); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, b)
	}
	for _, f := range []string{"usr/bin/longhaul", "usr/share/man/man1/longhaul.1.gz", "lib/systemd/system/longhaul-fixture.service"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s left after purge", f)
		}
	}
}

func debArch() string {
	if runtime.GOARCH == "386" {
		return "i386"
	}
	return runtime.GOARCH
}

// installDeb installs deb into an empty dpkg root.
func installDeb(t *testing.T, deb string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("dpkg", "--root="+root, "--force-script-chrootless", "--log=/dev/null", "-i", deb).CombinedOutput()
	if err != nil {
		if strings.Contains(string(b), "superuser privilege") {
			t.Skipf("dpkg needs root to install: %s", b)
		}
		t.Fatalf("dpkg -i: %v\n%s", err, b)
	}
	return root
}

func checkInstalled(t *testing.T, root string, units map[string]string) {
	t.Helper()
	out, _, code := exe(t, filepath.Join(root, "usr/bin/longhaul"), "version")
	if code != 0 || !strings.HasPrefix(out, "longhaul v1.2.3\ncommit:   0123456789abcdef\n") {
		t.Errorf("installed longhaul version: exit %d\n%s", code, out)
	}
	page, err := exec.Command("man", "-M", filepath.Join(root, "usr/share/man"), "longhaul-plan").Output()
	if err != nil || !strings.Contains(string(page), "--emit") || !strings.Contains(string(page), "longhaul v1.2.3") {
		t.Errorf("man longhaul-plan from the package: %v\n%.400s", err, page)
	}
	if page, err := exec.Command("man", "-M", filepath.Join(root, "usr/share/man"), "longhaul").Output(); err != nil || !strings.Contains(string(page), "longhaul-audit(1)") {
		t.Errorf("man longhaul: %v\n%.400s", err, page)
	}
	for f, want := range map[string]string{
		"usr/share/bash-completion/completions/longhaul":    "__start_longhaul",
		"usr/share/zsh/vendor-completions/_longhaul":        "#compdef longhaul",
		"usr/share/fish/vendor_completions.d/longhaul.fish": "complete -c longhaul",
	} {
		if b, err := os.ReadFile(filepath.Join(root, f)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v", f, err)
		}
	}
	for name, body := range units {
		b, err := exec.Command("systemd-analyze", "--root="+root, "cat-config", "systemd/system/"+name).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "/lib/systemd/system/"+name) || !strings.Contains(string(b), strings.TrimSpace(body)) {
			t.Errorf("systemd-analyze --root cat-config %s: %v\n%s", name, err, b)
		}
	}
	if b, err := exec.Command("dpkg", "--root="+root, "-s", "longhaul").Output(); err != nil || !strings.Contains(string(b), "Status: install ok installed") || !strings.Contains(string(b), "Version: 1.2.3") {
		t.Errorf("dpkg -s: %v\n%s", err, b)
	}
}

// systemctlCat shows the packaged unit through the host's running
// systemd when there is one (systemd as PID 1, as on a Debian 12 machine;
// not in a chroot or this VM): the file is put among the runtime units
// (/run/systemd/system) for the time of the check, and systemctl cat must
// print it. A host that already has the unit, or whose manager refuses
// the reload, is left alone and the check skipped with a log line.
func systemctlCat(t *testing.T, root, unit string) {
	t.Helper()
	if st, err := os.Stat("/run/systemd/system"); err != nil || !st.IsDir() {
		t.Logf("systemctl cat %s: systemd is not PID 1 here: systemd-analyze --root alone checks the unit", unit)
		return
	}
	if exec.Command("systemctl", "cat", unit).Run() == nil {
		t.Logf("systemctl cat %s: the host has that unit already; not touched", unit)
		return
	}
	body, err := os.ReadFile(filepath.Join(root, "lib/systemd/system", unit))
	if err != nil {
		t.Fatalf("the package has no %s: %v", unit, err)
	}
	dst := filepath.Join("/run/systemd/system", unit)
	if err := os.WriteFile(dst, body, 0o644); err != nil {
		t.Logf("systemctl cat %s: cannot add a runtime unit: %v", unit, err)
		return
	}
	defer func() {
		os.Remove(dst)
		_ = exec.Command("systemctl", "daemon-reload").Run()
	}()
	if b, err := exec.Command("systemctl", "daemon-reload").CombinedOutput(); err != nil {
		t.Logf("systemctl daemon-reload refused (%v): %s", err, b)
		return
	}
	b, err := exec.Command("systemctl", "cat", unit).CombinedOutput()
	if err != nil || !strings.Contains(string(b), strings.TrimSpace(string(body))) {
		t.Errorf("systemctl cat %s: %v\n%s", unit, err, b)
	}
}

// TestDebVersion checks the Debian version scripts/mkdeb.sh gives a
// build's version: a tag's numbers, or 0.0~git for an untagged build even
// when its commit hash starts with a digit (8d6dd56 as a version sorted
// above every later 0.0~git build: dpkg called the update a downgrade).
func TestDebVersion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct{ version, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-4-gabc1234", "1.2.3+4+gabc1234"},
		{"8d6dd56", "0.0~git"},
		{"abcdef0", "0.0~git"},
		{"8d6dd56-dirty", "0.0~git"},
	} {
		cmd := exec.Command("scripts/mkdeb.sh", "--print-version")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "VERSION="+tc.version, "BIN=/nonexistent")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("VERSION=%s mkdeb.sh --print-version: %v", tc.version, err)
		}
		got := strings.TrimSpace(string(b))
		if tc.want == "0.0~git" && !strings.HasPrefix(got, tc.want) || tc.want != "0.0~git" && got != tc.want {
			t.Errorf("VERSION=%s: Debian version %q, want %q", tc.version, got, tc.want)
		}
	}
}
