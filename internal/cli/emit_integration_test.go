//go:build linux

package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/longhaul/longhaul/internal/emit"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// emitHost gives a throwaway namespace the same small host: a veth with
// a default route and old Ubuntu's tcp_rmem/tcp_wmem, so a plan made in
// one applies to another.
func emitHost(t *testing.T) string {
	t.Helper()
	ns := nstest.New(t)
	err := netns.Do(ns, func() error {
		la := netlink.NewLinkAttrs()
		la.Name = "lh0"
		v := &netlink.Veth{LinkAttrs: la, PeerName: "lh1"}
		if err := netlink.LinkAdd(v); err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("198.18.9.1/24")
		if err := netlink.AddrAdd(v, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(v); err != nil {
			return err
		}
		peer, err := netlink.LinkByName("lh1")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(peer); err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: v.Attrs().Index, Gw: net.ParseIP("198.18.9.254")}); err != nil {
			return err
		}
		for k, v := range map[string]string{"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304", "net.ipv4.tcp_slow_start_after_idle": "1"} {
			if err := sysctl.Write(sysctl.DefaultRoot, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// nsState is what a plan changes in a namespace: its per-namespace
// sysctls (as the kernel prints them) and its IPv4 routes.
func nsState(t *testing.T, ns string, keys []string) map[string]string {
	t.Helper()
	st := map[string]string{}
	do := netns.Do
	if ns == "" { // the test's own (the host's) namespace
		do = func(_ string, fn func() error) error { return fn() }
	}
	err := do(ns, func() error {
		for _, k := range keys {
			v, err := sysctl.Read(sysctl.DefaultRoot, k)
			if err != nil {
				return err
			}
			st[k] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ns != "" {
		out, err := exec.Command("ip", "-n", ns, "-4", "route", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("ip route: %v: %s", err, out)
		}
		st["routes"] = string(out)
	}
	return st
}

// ansible runs ansible-playbook in ns with a private ansible home.
func ansible(t *testing.T, ns string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	argv := append([]string{"ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "ansible_become=false"}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_LOCAL_TEMP="+home+"/tmp", "ANSIBLE_NOCOLOR=1", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3", "ANSIBLE_RETRY_FILES_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var recap = regexp.MustCompile(`localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=0`)

// TestIntegrationEmitAnsible: the playbook of a plan, run by Debian's
// ansible-core in one throwaway namespace, leaves the same per-namespace
// sysctls and default route as longhaul apply --netns of the same plan in
// another; a second run changes nothing; the persisted file holds the
// plan's values.
func TestIntegrationEmitAnsible(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (scripts/deps.sh installs ansible-core)")
	}
	nsApply, nsAnsible := emitHost(t), emitHost(t)
	dir := t.TempDir()
	planFile, playbook, persisted := filepath.Join(dir, "plan.json"), filepath.Join(dir, "longhaul.yml"), filepath.Join(dir, "sysctl.d", "90-longhaul.conf")
	planMustRun(t, "plan", "--netns", nsApply, "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "default", "--app-buffers", "--state-dir", filepath.Join(dir, "j"), "-o", planFile)
	if err := os.WriteFile(playbook, []byte(planMustRun(t, "plan", "--from", planFile, "--emit", "ansible")), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := readPlan(context.Background(), planFile)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	hostWide := 0
	for _, s := range emit.Sysctls(p) {
		if s.Host {
			hostWide++
		} else {
			keys = append(keys, s.Key)
		}
	}
	if len(keys) < 3 || hostWide == 0 || !strings.Contains(planMustRun(t, "plan", "--from", planFile, "--emit", "nmstate"), "initcwnd") {
		t.Fatalf("the plan should change tcp_rmem, tcp_wmem, tcp_slow_start_after_idle, host-wide keys and the default route: %v", p.Items)
	}
	hostBefore := nsState(t, "", keys)

	if out := ansible(t, "", "--syntax-check", playbook); !strings.Contains(out, "playbook: "+playbook) {
		t.Fatalf("syntax check:\n%s", out)
	}
	planMustRun(t, "apply", planFile, "--netns", nsApply, "--state-dir", filepath.Join(dir, "j"))
	vars := []string{"-e", `{"longhaul_scopes": ["netns"], "longhaul_sysctl_file": "` + persisted + `"}`, playbook}
	if err := os.MkdirAll(filepath.Dir(persisted), 0o755); err != nil {
		t.Fatal(err)
	}
	first := ansible(t, nsAnsible, vars...)
	if m := recap.FindStringSubmatch(first); m == nil || m[2] == "0" {
		t.Fatalf("first run changed nothing:\n%s", first)
	}
	applied, played := nsState(t, nsApply, keys), nsState(t, nsAnsible, keys)
	if diff := cmp.Diff(applied, played); diff != "" {
		t.Errorf("longhaul apply --netns vs the Ansible playbook (-apply +ansible):\n%s", diff)
	}
	if !strings.Contains(played["routes"], "default via 198.18.9.254 dev lh0 initcwnd 20") {
		t.Errorf("the playbook's default route:\n%s", played["routes"])
	}
	for _, s := range emit.Sysctls(p) {
		if !s.Host && sysctl.Normalize(played[s.Key]) != s.Value {
			t.Errorf("%s = %q after the playbook, plan %q", s.Key, played[s.Key], s.Value)
		}
	}
	second := ansible(t, nsAnsible, vars...)
	if m := recap.FindStringSubmatch(second); m == nil || m[2] != "0" {
		t.Errorf("second run is not idempotent:\n%s", second)
	}
	b, err := os.ReadFile(persisted)
	if err != nil {
		t.Fatal(err)
	}
	as, problems := sysconf.ParseSysctlFile(persisted, bytes.NewReader(b))
	if len(problems) > 0 || len(as) != len(emit.Sysctls(p)) {
		t.Errorf("persisted file: %d assignments, problems %q:\n%s", len(as), problems, b)
	}
	if diff := cmp.Diff(hostBefore, nsState(t, "", keys)); diff != "" {
		t.Errorf("the host changed (-before +after):\n%s", diff)
	}
}
