package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/apply"
	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/plan"
)

// planGolden compares got with testdata/golden/NAME.golden (rewrite with
// go test -update).
func planGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".golden"), name, []byte(got))
}

func planMustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, args...)
	if err != nil {
		t.Fatalf("longhaul %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// planCopyHost copies a fixture host tree to a temporary root, with a
// systemd-networkd configuration for eth0.
func planCopyHost(t *testing.T, fixture string) string {
	t.Helper()
	src := hosts + fixture
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case fi.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	nd := filepath.Join(dst, "etc/systemd/network")
	if err := os.MkdirAll(nd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nd, "10-eth0.network"), []byte("[Match]\nName=eth0\n\n[Network]\nDHCP=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// planSnapshotWithRoutes saves the fixture's audit snapshot with a DHCP
// default route via eth0 added, as audit --json on a live host has it.
func planSnapshotWithRoutes(t *testing.T, fixture string) string {
	t.Helper()
	out := planMustRun(t, "audit", "--root", hosts+fixture, "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	doc["host"].(map[string]any)["net"] = map[string]any{"routes": []any{
		map[string]any{"family": "inet", "dst": "default", "gateway": "10.0.0.1", "dev": "eth0", "table": 254, "protocol": "dhcp"},
		map[string]any{"family": "inet", "dst": "10.0.0.0/24", "dev": "eth0", "table": 254, "protocol": "kernel"},
	}}
	b, _ := json.Marshal(doc)
	name := filepath.Join(t.TempDir(), fixture+".snapshot.json")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestPlanGolden(t *testing.T) {
	snap := planSnapshotWithRoutes(t, "ubuntu-2004")
	tests := []struct {
		name string
		args []string
	}{
		{"plan-ubuntu-2004", []string{"plan", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s"}},
		{"plan-ubuntu-2004.json", []string{"plan", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "--json"}},
		{"plan-debian-13-server", []string{"plan", "--root", hosts + "debian-13", "--rtt", "100ms", "--rate", "10Gbit/s", "--flows", "4", "--role", "server", "--app-buffers", "--memory-budget", "1GiB"}},
		{"plan-broken-client", []string{"plan", "--root", hosts + "broken", "--rtt", "80ms", "--rate", "500Mbit/s", "--role", "client"}},
		{"plan-snapshot-dst", []string{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24"}},
		{"plan-snapshot-dst.json", []string{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "--json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planMustRun(t, tc.args...)
			if strings.HasSuffix(tc.name, ".json") && !json.Valid([]byte(got)) {
				t.Fatalf("not JSON:\n%s", got)
			}
			planGolden(t, tc.name, got)
		})
	}
}

// TestPlanAcceptance: 200 ms / 1 Gbit/s / 1 flow gives buffers within 2x
// of the model's need, not 2 GB, on every fixture.
func TestPlanAcceptance(t *testing.T) {
	for _, fixture := range []string{"ubuntu-2004", "debian-13", "broken"} {
		out := planMustRun(t, "plan", "--root", hosts+fixture, "--rtt", "200ms", "--rate", "1Gbit/s", "--flows", "1", "--json")
		var p plan.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			need := map[string]int64{"net.ipv4.tcp_rmem": p.Model.ReceiverNeedBytes, "net.ipv4.tcp_wmem": p.Model.SenderNeedBytes}[it.Key]
			if need == 0 {
				continue
			}
			var mn, def, mx int64
			if _, err := fmt.Sscan(it.New, &mn, &def, &mx); err != nil {
				t.Fatal(err)
			}
			if mx < need || mx > 2*need {
				t.Errorf("%s: %s max %d for a need of %d", fixture, it.Key, mx, need)
			}
		}
	}
}

// TestApplyGolden applies a plan with --persist to a copied tree: the
// report, the sysctl.d drop-in and the systemd-networkd drop-in are
// golden, and rollback brings the tree back.
func TestApplyGolden(t *testing.T) {
	root := planCopyHost(t, "ubuntu-2004")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	planMustRun(t, "plan", "--snapshot", planSnapshotWithRoutes(t, "ubuntu-2004"), "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "-o", planFile)
	before := planTreeFiles(t, root)

	planGolden(t, "apply-dry-run", planMustRun(t, "apply", planFile, "--root", root, "--persist", "--dry-run"))
	if diff := cmp.Diff(before, planTreeFiles(t, root)); diff != "" {
		t.Fatalf("dry run changed the tree (-want +got):\n%s", diff)
	}
	planGolden(t, "apply-persist", planMustRun(t, "apply", planFile, "--root", root, "--persist"))
	for golden, file := range map[string]string{
		"apply-sysctl.d.conf":     "etc/sysctl.d/90-longhaul.conf",
		"apply-networkd-dropin":   "etc/systemd/network/10-eth0.network.d/90-longhaul.conf",
		"apply-proc-sys-tcp-rmem": "proc/sys/net/ipv4/tcp_rmem",
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		planGolden(t, golden, string(b))
	}
	planGolden(t, "apply-again", planMustRun(t, "apply", planFile, "--root", root, "--persist"))
	list := planMustRun(t, "rollback", "--list", "--root", root)
	if !strings.Contains(list, "0001") || !strings.Contains(list, "applied") {
		t.Errorf("rollback --list:\n%s", list)
	}
	planGolden(t, "rollback", planMustRun(t, "rollback", "--root", root))
	if diff := cmp.Diff(before, planTreeFiles(t, root)); diff != "" {
		t.Errorf("rollback did not restore the tree (-want +got):\n%s", diff)
	}
	if out := planMustRun(t, "rollback", "--root", root); !strings.Contains(out, "nothing to roll back") {
		t.Errorf("second rollback: %q", out)
	}
	out := planMustRun(t, "rollback", "--list", "--root", root, "--json")
	var doc txListJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "longhaul.transactions/v1" || len(doc.Transactions) != 1 || doc.Transactions[0].State != apply.StateRolledBack {
		t.Errorf("rollback --list --json: %v\n%s", err, out)
	}
}

// planTreeFiles records the tree below root but the journal directory.
func planTreeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "var" || strings.HasPrefix(rel, "var/") {
			return nil
		}
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInterruptedApplyIsReported: after an apply killed half way, plan,
// apply and rollback all say so on stderr at start.
func TestInterruptedApplyIsReported(t *testing.T) {
	root := planCopyHost(t, "debian-13")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	planMustRun(t, "plan", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile)
	p, err := readPlan(context.Background(), planFile)
	if err != nil {
		t.Fatal(err)
	}
	killed := errors.New("killed")
	_, err = apply.Apply(p, apply.Options{Root: root, Hook: func(s string) error {
		if s == "sysctl net.ipv4.tcp_rmem" {
			return killed
		}
		return nil
	}})
	if !errors.Is(err, killed) {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"plan", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"apply", planFile, "--root", root, "--dry-run"},
		{"rollback", "--root", root, "--dry-run"},
	} {
		_, errOut, _ := run(t, args...)
		if !strings.Contains(errOut, "transaction 0001") || !strings.Contains(errOut, "was interrupted while applying") {
			t.Errorf("%s: stderr %q does not report the interrupted apply", args[0], errOut)
		}
	}
	// Applying the same plan completes it.
	out := planMustRun(t, "apply", planFile, "--root", root)
	if !strings.Contains(out, "completed after an interruption") {
		t.Errorf("apply of the same plan:\n%s", out)
	}
}

func TestPlanApplyRollbackBadInput(t *testing.T) {
	root := planCopyHost(t, "ubuntu-2004")
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	planMustRun(t, "plan", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s", "-o", planFile)
	p, err := readPlan(context.Background(), planFile)
	if err != nil {
		t.Fatal(err)
	}
	edited := func(name string, edit func(*plan.Plan)) string {
		q := p
		q.Items = append([]plan.Item(nil), p.Items...)
		edit(&q)
		b, _ := json.Marshal(q)
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	unknownKey := edited("unknown.json", func(q *plan.Plan) {
		q.Items = append(q.Items, plan.Item{Key: "net.ipv4.tcp_collapse_max_bytes", Kind: plan.KindSysctl, Current: "0", New: "6291456"})
	})
	minMax := edited("minmax.json", func(q *plan.Plan) { q.Items[0].New = "62914560 131072 4096" })
	tooBig := edited("toobig.json", func(q *plan.Plan) { q.Items[0].New = "4096 131072 4294967296" })
	otherKernel := edited("kernel.json", func(q *plan.Plan) { q.Kernel = "6.12.48+deb13-amd64" })
	unknownField := filepath.Join(dir, "field.json")
	b, _ := os.ReadFile(planFile)
	if err := os.WriteFile(unknownField, bytes.Replace(b, []byte(`"schema"`), []byte(`"shema"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := planCopyHost(t, "ubuntu-2004")
	planMustRun(t, "apply", planFile, "--root", damaged)
	jf := filepath.Join(damaged, "var/lib/longhaul/journal/0001.json")
	jb, _ := os.ReadFile(jf)
	if err := os.WriteFile(jf, jb[:len(jb)-20], 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string
	}{
		{"plan without a path", []string{"plan"}, 2, "plan needs the path"},
		{"bad role", []string{"plan", "--rtt", "200ms", "--rate", "1Gbit/s", "--role", "router"}, 2, "--role"},
		{"bad dst", []string{"plan", "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "the-internet"}, 2, "--dst"},
		{"whole-internet dst", []string{"plan", "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "0.0.0.0/0"}, 2, "--dst default"},
		{"bad budget", []string{"plan", "--rtt", "200ms", "--rate", "1Gbit/s", "--memory-budget", "lots"}, 2, "--memory-budget"},
		{"over budget", []string{"plan", "--root", root, "--rtt", "500ms", "--rate", "10Gbit/s", "--flows", "50", "--memory-budget", "1GiB"}, 2, "more than the memory budget"},
		{"snapshot with root", []string{"plan", "--snapshot", "x.json", "--root", root, "--rtt", "200ms", "--rate", "1Gbit/s"}, 2, "does not go with"},
		{"apply without a plan", []string{"apply"}, 2, "takes one plan file"},
		{"apply a missing file", []string{"apply", filepath.Join(dir, "nope.json")}, 1, "no such file"},
		{"apply a file that is not a plan", []string{"apply", "golden_test.go", "--root", root}, 2, "not a plan file"},
		{"apply a plan with an unknown field", []string{"apply", unknownField, "--root", root}, 2, "not a plan file"},
		{"unknown key", []string{"apply", unknownKey, "--root", root}, 2, "no such key on this kernel"},
		{"min above max", []string{"apply", minMax, "--root", root}, 2, "min <= default <= max"},
		{"over the int limit", []string{"apply", tooBig, "--root", root}, 2, "2147483647"},
		{"another kernel", []string{"apply", otherKernel, "--root", root}, 2, "made for Linux 6.12.48+deb13-amd64"},
		{"persist in a namespace", []string{"apply", planFile, "--netns", "x", "--persist"}, 2, "--persist"},
		{"damaged journal refuses apply", []string{"apply", planFile, "--root", damaged}, 2, "truncated"},
		{"damaged journal refuses rollback", []string{"rollback", "1", "--root", damaged}, 2, "truncated"},
		{"list with an id", []string{"rollback", "--list", "3", "--root", root}, 2, "takes no id"},
		{"bad id", []string{"rollback", "abc", "--root", root}, 2, "transaction id"},
		{"no such transaction", []string{"rollback", "7", "--root", root}, 2, "no transaction 0007"},
		{"two ids", []string{"rollback", "1", "2"}, 2, "at most one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := planTreeFiles(t, root)
			_, _, err := run(t, tc.args...)
			var stderr bytes.Buffer
			code := ExitCode(err, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (err %v)", code, tc.wantCode, err)
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("stderr %q does not mention %q", msg, tc.wantMsg)
			}
			if strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", msg)
			}
			if diff := cmp.Diff(before, planTreeFiles(t, root)); diff != "" {
				t.Errorf("the tree changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanApplyRollbackHelp(t *testing.T) {
	for _, cmd := range []string{"plan", "apply", "rollback"} {
		out, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "longhaul "+cmd) {
			t.Errorf("%s --help has no examples:\n%s", cmd, out)
		}
	}
}

// A state directory that cannot be trusted (writable by others) hides
// what an earlier apply left: plan says so instead of staying silent,
// and still plans.
func TestPlanWarnsOfAnUncheckableJournal(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "plan", "--root", hosts+"debian-13", "--rtt", "100ms", "--rate", "1Gbit/s", "--state-dir", dir)
	if err != nil || !strings.Contains(out, "Plan for") {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if !strings.Contains(errOut, "could not check for interrupted transactions") {
		t.Errorf("no warning about the untrusted journal: %q", errOut)
	}
	// A journal directory that does not exist is nothing to warn about.
	_, errOut, _ = run(t, "plan", "--root", hosts+"debian-13", "--rtt", "100ms", "--rate", "1Gbit/s", "--state-dir", filepath.Join(t.TempDir(), "none"))
	if strings.Contains(errOut, "warning") {
		t.Errorf("warned about a missing journal: %q", errOut)
	}
}
