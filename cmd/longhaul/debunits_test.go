package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDebAsInstalled builds the package the way make deb does (this
// repository's deploy/ directory, scripts/mkdeb.sh), unpacks it with
// dpkg-deb -x (no root needed) and checks what it installs as installed:
// every unit passes systemd-analyze verify against the unpacked tree
// (--root: ExecStart paths are looked up in the package, Documentation=
// man: pages in its man pages), each ExecStart binary is an executable
// file of the package, the directive examples in a unit's comments pass
// verify as a drop-in (systemd cuts an unquoted Environment= at the first
// space), and the exporter's alert rules and dashboard are packaged.
func TestDebAsInstalled(t *testing.T) {
	for _, tool := range []string{"dpkg-deb", "systemd-analyze", "man"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make deps installs it)", tool)
		}
	}
	hostUnits := hostUnitDir()
	if hostUnits == "" {
		t.Skip("no systemd system unit directory on this host (make deps installs systemd)")
	}
	work := t.TempDir()
	man, out, root := filepath.Join(work, "man"), filepath.Join(work, "deb"), filepath.Join(work, "root")
	if b, err := exec.Command("go", "run", "../longhaul-man", "-o", man, "-version", "v1.0.0").CombinedOutput(); err != nil {
		t.Fatalf("man pages: %v\n%s", err, b)
	}
	mk := exec.Command("scripts/mkdeb.sh")
	mk.Dir = "../.."
	mk.Env = append(os.Environ(), "COMPRESS=none", "BIN="+binary(t), "MAN="+man, "OUT="+out, "VERSION=v1.0.0")
	b, err := mk.Output()
	if err != nil {
		t.Fatalf("mkdeb: %v", err)
	}
	if b, err := exec.Command("dpkg-deb", "-x", strings.TrimSpace(string(b)), root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, b)
	}
	units, _ := filepath.Glob(filepath.Join(root, "lib/systemd/system/*.service"))
	if len(units) < 2 {
		t.Fatalf("the package has units %v, want the serve and the exporter units", units)
	}
	// The units a Debian 12 system has (targets, slices) that the
	// packaged units depend on, from this host, beside the package's.
	for _, pat := range []string{"*.target", "*.slice"} {
		host, _ := filepath.Glob(filepath.Join(hostUnits, pat))
		for _, h := range host {
			dst := filepath.Join(root, "lib/systemd/system", filepath.Base(h))
			if _, err := os.Stat(dst); err == nil {
				continue
			}
			if b, err := os.ReadFile(h); err == nil {
				_ = os.WriteFile(dst, b, 0o644)
			}
		}
	}
	t.Run("units", func(t *testing.T) {
		for _, u := range units {
			name := filepath.Base(u)
			body, err := os.ReadFile(u)
			if err != nil {
				t.Fatal(err)
			}
			for _, exe := range execStarts(string(body)) {
				st, err := os.Stat(filepath.Join(root, exe))
				if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
					t.Errorf("%s: ExecStart %s is not an executable in the package: %v", name, exe, err)
				}
			}
			if out := verifyUnit(t, root, name); out != "" {
				t.Errorf("systemd-analyze verify %s as installed:\n%s", name, out)
			}
			examples := commentDirectives(string(body))
			if len(examples) == 0 {
				continue
			}
			dropin := filepath.Join(root, "etc/systemd/system", name+".d", "example.conf")
			writeDropin(t, dropin, examples)
			if out := verifyUnit(t, root, name); out != "" {
				t.Errorf("%s: the examples in its comments %q do not pass systemd-analyze verify:\n%s", name, examples, out)
			}
			// The check sees the drop-in: the same example unquoted is refused.
			for _, ex := range examples {
				if strings.HasPrefix(ex, `Environment="`) && strings.Contains(ex, " ") {
					writeDropin(t, dropin, []string{strings.ReplaceAll(ex, `"`, "")})
					if out := verifyUnit(t, root, name); !strings.Contains(out, "Invalid environment assignment") {
						t.Errorf("%s: an unquoted Environment= drop-in passed verify: %q", name, out)
					}
					break
				}
			}
			os.RemoveAll(filepath.Dir(dropin))
		}
	})
	t.Run("exporter rules and dashboard", func(t *testing.T) {
		for pkg, repo := range map[string]string{
			"usr/share/longhaul/prometheus/longhaul-rules.yml":                         "../../deploy/prometheus/longhaul-rules.yml",
			"usr/share/longhaul/grafana/longhaul-dashboard.json":                       "../../deploy/grafana/longhaul-dashboard.json",
			"usr/share/longhaul/grafana/longhaul-mesh.json":                            "../../deploy/grafana/longhaul-mesh.json",
			"usr/share/longhaul/prometheus/longhaul-probes.yml":                        "../../deploy/prometheus/longhaul-probes.yml",
			"usr/share/longhaul/prometheus/longhaul-probe-targets.example.yml":         "../../deploy/prometheus/longhaul-probe-targets.example.yml",
			"usr/share/longhaul/prometheus/longhaul-probe-targets.partial.example.yml": "../../deploy/prometheus/longhaul-probe-targets.partial.example.yml",
			"usr/share/longhaul/prometheus/longhaul-probe-targets.hub.example.yml":     "../../deploy/prometheus/longhaul-probe-targets.hub.example.yml",
			"usr/share/longhaul/prometheus/longhaul-exporters.example.yml":             "../../deploy/prometheus/longhaul-exporters.example.yml",
			"usr/share/longhaul/grafana/longhaul-provisioning.yml":                     "../../deploy/grafana/longhaul-provisioning.yml",
			"usr/share/longhaul/prometheus/longhaul-rules.test.yml":                    "",
			"usr/share/longhaul/prometheus/longhaul-rules-paths.test.yml":              "",
		} {
			got, err := os.ReadFile(filepath.Join(root, pkg))
			if repo == "" {
				if err == nil {
					t.Errorf("%s: promtool's unit test of the rules is packaged", pkg)
				}
				continue
			}
			want, _ := os.ReadFile(repo)
			if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
				t.Errorf("%s: not in the package as %s (%v)", pkg, repo, err)
			}
		}
	})
}

func hostUnitDir() string {
	for _, d := range []string{"/lib/systemd/system", "/usr/lib/systemd/system"} {
		if _, err := os.Stat(filepath.Join(d, "sysinit.target")); err == nil {
			return d
		}
	}
	return ""
}

// verifyUnit runs systemd-analyze verify on the installed unit under
// root and returns what it printed (nothing when the unit is accepted).
func verifyUnit(t *testing.T, root, name string) string {
	t.Helper()
	cmd := exec.Command("systemd-analyze", "verify", "--root="+root, "/lib/systemd/system/"+name)
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr/share/man"), "SYSTEMD_LOG_COLOR=0")
	b, err := cmd.CombinedOutput()
	if err != nil && len(b) == 0 {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

func writeDropin(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[Service]\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// execStarts returns the binaries of a unit's ExecStart= lines (after
// systemd's prefixes -@:+!).
func execStarts(unit string) []string {
	var bins []string
	for _, m := range regexp.MustCompile(`(?m)^ExecStart=[-@:+!]*(\S+)`).FindAllStringSubmatch(unit, -1) {
		bins = append(bins, m[1])
	}
	return bins
}

// commentDirectives returns the unit directives shown as examples in the
// unit's comments ("#   Key=value").
func commentDirectives(unit string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#\s+([A-Z][A-Za-z]+=.*)$`).FindAllStringSubmatch(unit, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}
