package emit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNmstatectl runs the real nmstatectl when one is installed (Debian
// 12 has no package; `cargo install nmstatectl` builds it, ~20 min, so CI
// skips this): `format` parses the state strictly (unknown fields are
// errors), and `gc` turns it, with an interface that has the route's
// device, into the NetworkManager keyfile nmstate would write, which must
// carry the planned initcwnd.
func TestNmstatectl(t *testing.T) {
	bin := os.Getenv("LONGHAUL_NMSTATECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nmstatectl"); err != nil {
			t.Skip("nmstatectl not installed (set LONGHAUL_NMSTATECTL to a binary)")
		}
	}
	out, err := Render(loadPlan(t, "fleet.json"), "nmstate")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.yml")
	if err := os.WriteFile(state, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bin, "-q", "format", state).CombinedOutput(); err != nil || !strings.Contains(string(b), "initcwnd: 20") {
		t.Fatalf("nmstatectl format: %v\n%s", err, b)
	}
	iface := "interfaces:\n- name: eth0\n  type: ethernet\n  state: up\n  ipv4:\n    enabled: true\n    dhcp: false\n    address:\n    - ip: 10.0.0.5\n      prefix-length: 24\n"
	full := filepath.Join(dir, "full.yml")
	// One document: the interface, then the emitted state without its "---".
	if err := os.WriteFile(full, []byte(iface+strings.TrimPrefix(string(out), "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(bin, "-q", "gc", full).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "route0=0.0.0.0/0,10.0.0.1") || !strings.Contains(string(b), "initcwnd=20") {
		t.Errorf("nmstatectl gc: %v\n%s", err, b)
	}
}
