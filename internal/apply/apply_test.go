package apply

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/sysctl"
)

func readSysctl(t testing.TB, root, key string) string {
	t.Helper()
	v, err := sysctl.Read(filepath.Join(root, "proc/sys"), key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestApplyAndRollback(t *testing.T) {
	root := hostWithNetworkd(t, "ubuntu-2004")
	fr := newFakeRouter(defaultRoute)
	p := makePlan(t, root, fr, req200ms1G)
	before, routesBefore := tree(t, root), fr.state()

	o := opts(root, fr)
	o.Persist = true
	rep, err := Apply(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ID != "0001" || rep.State != StateApplied {
		t.Fatalf("report id %q state %q", rep.ID, rep.State)
	}
	for _, it := range p.Items {
		if it.Kind == plan.KindSysctl {
			if got := readSysctl(t, root, it.Key); got != it.New {
				t.Errorf("%s = %q after apply, want %q", it.Key, got, it.New)
			}
		}
	}
	if r, ok := fr.routes["inet 203.0.113.0/24 254"]; !ok || r.InitCwnd != 20 || r.Gateway != "10.0.0.1" || r.Dev != "eth0" {
		t.Errorf("route after apply: %+v (found %v); log %v", r, ok, fr.log)
	}
	dropIn, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/90-longhaul.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dropIn), "transaction 0001") || !strings.Contains(string(dropIn), "net.ipv4.tcp_rmem = 4096 131072 62914560") {
		t.Errorf("sysctl drop-in:\n%s", dropIn)
	}
	nd, err := os.ReadFile(filepath.Join(root, "etc/systemd/network/10-eth0.network.d/90-longhaul.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(nd), "Destination=203.0.113.0/24") || !strings.Contains(string(nd), "InitialCongestionWindow=20") {
		t.Errorf("networkd drop-in:\n%s", nd)
	}
	// /etc/sysctl.conf (via 99-sysctl.conf) sets tcp_rmem after ours.
	if !containsAll(rep.Conflicts, "/etc/sysctl.conf:2", "tuned is running") {
		t.Errorf("conflicts %q miss sysctl.conf or tuned", rep.Conflicts)
	}

	// Applying the same plan again changes nothing.
	again, err := Apply(p, o)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if again.ID != "" || !containsAll(again.Notes, "nothing to change") {
		t.Errorf("second apply: id %q notes %q", again.ID, again.Notes)
	}

	rb, err := Rollback("", opts(root, fr))
	if err != nil {
		t.Fatal(err)
	}
	if rb.ID != "0001" || rb.State != StateRolledBack {
		t.Errorf("rollback report id %q state %q", rb.ID, rb.State)
	}
	sameTree(t, "after rollback", before, tree(t, root))
	if diff := cmp.Diff(routesBefore, fr.state()); diff != "" {
		t.Errorf("routes after rollback (-want +got):\n%s", diff)
	}
	// Idempotent.
	rb, err = Rollback("1", opts(root, fr))
	if err != nil || !containsAll(rb.Notes, "already rolled back") {
		t.Errorf("second rollback: %v, notes %q", err, rb.Notes)
	}
	sameTree(t, "after second rollback", before, tree(t, root))
	list, err := List(opts(root, fr))
	if err != nil || len(list) != 1 || list[0].State != StateRolledBack || list[0].Changes == 0 {
		t.Errorf("list: %+v, %v", list, err)
	}
}

func containsAll(list []string, subs ...string) bool {
	for _, s := range subs {
		found := false
		for _, l := range list {
			if strings.Contains(l, s) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// steps runs a full apply and returns the names of its hook points.
func steps(t *testing.T, fixture string, run func(o Options) error) []string {
	t.Helper()
	root := hostWithNetworkd(t, fixture)
	fr := newFakeRouter(defaultRoute)
	var names []string
	o := opts(root, fr)
	o.Hook = func(s string) error { names = append(names, s); return nil }
	o.Persist = true
	p := makePlan(t, root, fr, req200ms1G)
	if _, err := Apply(p, o); err != nil {
		t.Fatal(err)
	}
	if run != nil {
		o.Persist = false
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

var errKilled = errors.New("killed by the test")

// TestApplyKilledAtEveryStep: an apply stopped at any step boundary is
// reported as interrupted, and rollback then restores every runtime
// value, route and file byte for byte. A rollback stopped at any of its
// own steps can be run again with the same result.
func TestApplyKilledAtEveryStep(t *testing.T) {
	all := steps(t, "ubuntu-2004", nil)
	want := []string{"journal", "sysctl net.ipv4.tcp_rmem", "route 203.0.113.0/24", "file /etc/sysctl.d/90-longhaul.conf", "applied"}
	for _, w := range want {
		if !containsAll(all, w) {
			t.Fatalf("steps %q lack %q", all, w)
		}
	}
	for _, stop := range all {
		t.Run(stop, func(t *testing.T) {
			root := hostWithNetworkd(t, "ubuntu-2004")
			fr := newFakeRouter(defaultRoute)
			p := makePlan(t, root, fr, req200ms1G)
			before, routesBefore := tree(t, root), fr.state()
			o := opts(root, fr)
			o.Persist = true
			o.Hook = func(s string) error {
				if s == stop {
					return errKilled
				}
				return nil
			}
			if _, err := Apply(p, o); !errors.Is(err, errKilled) {
				t.Fatalf("apply: %v, want the simulated kill", err)
			}
			pending, err := Interrupted(opts(root, fr))
			if err != nil {
				t.Fatal(err)
			}
			if stop != "applied" && (len(pending) != 1 || pending[0].State != StateApplying) {
				t.Errorf("interrupted after %q: %+v", stop, pending)
			}
			// Another plan is refused while the transaction is pending.
			other := p
			other.Items = other.Items[:1]
			if _, err := Apply(other, opts(root, fr)); stop != "applied" && (err == nil || !strings.Contains(err.Error(), "was interrupted")) {
				t.Errorf("apply of another plan: %v, want refusal", err)
			}

			// Rollback, itself killed at each of its steps, then run again.
			for _, rstop := range []string{"rolling-back", "restore file /etc/sysctl.d/90-longhaul.conf", "restore route 203.0.113.0/24", "restore sysctl net.ipv4.tcp_rmem", ""} {
				ro := opts(root, fr)
				ro.Hook = func(s string) error {
					if s == rstop {
						return errKilled
					}
					return nil
				}
				if _, err := Rollback("", ro); err != nil && !errors.Is(err, errKilled) {
					t.Fatalf("rollback (stopped at %q): %v", rstop, err)
				}
			}
			sameTree(t, "after rollback", before, tree(t, root))
			if diff := cmp.Diff(routesBefore, fr.state()); diff != "" {
				t.Errorf("routes after rollback (-want +got):\n%s", diff)
			}
			if pending, _ := Interrupted(opts(root, fr)); len(pending) != 0 {
				t.Errorf("still interrupted after rollback: %+v", pending)
			}
		})
	}
}

// TestApplyCompletesInterrupted: applying the same plan again after a
// kill finishes the transaction instead of starting another.
func TestApplyCompletesInterrupted(t *testing.T) {
	root := hostWithNetworkd(t, "ubuntu-2004")
	fr := newFakeRouter(defaultRoute)
	p := makePlan(t, root, fr, req200ms1G)
	before := tree(t, root)
	o := opts(root, fr)
	o.Persist = true
	o.Hook = func(s string) error {
		if s == "route 203.0.113.0/24" {
			return errKilled
		}
		return nil
	}
	if _, err := Apply(p, o); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	o.Hook = nil
	rep, err := Apply(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Resumed || rep.ID != "0001" || rep.State != StateApplied {
		t.Errorf("resumed %v id %q state %q", rep.Resumed, rep.ID, rep.State)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/network/10-eth0.network.d/90-longhaul.conf")); err != nil {
		t.Errorf("networkd drop-in not written on completion: %v", err)
	}
	if _, err := Rollback("0001", opts(root, fr)); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after rollback of the completed transaction", before, tree(t, root))
}

func TestDryRunWritesNothing(t *testing.T) {
	root := hostWithNetworkd(t, "debian-13")
	fr := newFakeRouter(defaultRoute)
	p := makePlan(t, root, fr, req200ms1G)
	before := tree(t, root)
	o := opts(root, fr)
	o.Persist, o.DryRun = true, true
	rep, err := Apply(p, o)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after dry run", before, tree(t, root))
	if _, err := os.Stat(filepath.Join(root, "var")); err == nil {
		t.Errorf("dry run created the state directory")
	}
	if len(fr.log) != 0 {
		t.Errorf("dry run changed routes: %q", fr.log)
	}
	if len(rep.Files) != 2 || !strings.Contains(rep.Files[0].Content, "transaction 0001") {
		t.Errorf("dry run files: %+v", rep.Files)
	}
	changes := 0
	for _, c := range rep.Changes {
		if c.Status == "change" {
			changes++
		}
	}
	if changes < 4 {
		t.Errorf("dry run shows %d changes: %+v", changes, rep.Changes)
	}
}

// TestRefusals: bad input is refused with one line before anything is
// written.
func TestRefusals(t *testing.T) {
	base := func(t *testing.T) (string, *fakeRouter, plan.Plan) {
		root := hostWithNetworkd(t, "ubuntu-2004")
		fr := newFakeRouter(defaultRoute)
		return root, fr, makePlan(t, root, fr, req200ms1G)
	}
	setItem := func(p *plan.Plan, key, cur, val string) {
		for i := range p.Items {
			if p.Items[i].Key == key {
				p.Items[i].New = val
				if cur != "" {
					p.Items[i].Current = cur
				}
				return
			}
		}
		p.Items = append(p.Items, plan.Item{Key: key, Kind: plan.KindSysctl, Current: cur, New: val})
	}
	tests := []struct {
		name    string
		mutate  func(t *testing.T, root string, p *plan.Plan, o *Options)
		wantMsg string
	}{
		{"unknown key", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_collapse_max_bytes", "0", "6291456")
		}, "net.ipv4.tcp_collapse_max_bytes: no such key on this kernel"},
		{"key longhaul never sets", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_adv_win_scale", "1", "2")
		}, "longhaul plans never set this key"},
		{"bad key characters", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net/../../etc/passwd", "", "x")
		}, "empty or '..' component"},
		{"min above max", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_rmem", "", "8192 131072 4096")
		}, "min <= default <= max"},
		{"over the int limit", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_wmem", "", "4096 16384 2147483648")
		}, "2147483647"},
		{"not a number", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_slow_start_after_idle", "", "off")
		}, "want 0 or 1"},
		{"core max out of range", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.core.rmem_max", "212992", "-1")
		}, "out of range"},
		{"tcp_mem above RAM", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_mem", "786432 1048576 26777216", "786432 1048576 30000000")
		}, "more than the host's RAM"},
		{"tcp_mem unordered", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			setItem(p, "net.ipv4.tcp_mem", "786432 1048576 26777216", "786432 100 1000")
		}, "min <= pressure <= max"},
		{"plan for another kernel", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			p.Kernel = "6.12.48+deb13-amd64"
		}, "made for Linux 6.12.48+deb13-amd64 but this host runs 5.4.0-150-generic"},
		{"no kernel in the plan", func(t *testing.T, _ string, p *plan.Plan, _ *Options) { p.Kernel = "" }, "does not say which kernel"},
		{"not a plan", func(t *testing.T, _ string, p *plan.Plan, _ *Options) { p.Schema = "longhaul.calc/v1" }, "not a longhaul plan"},
		{"stale value", func(t *testing.T, root string, p *plan.Plan, _ *Options) {
			if err := os.WriteFile(filepath.Join(root, "proc/sys/net/ipv4/tcp_rmem"), []byte("4096\t131072\t8388608\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "make the plan again"},
		{"read-only key", func(t *testing.T, root string, p *plan.Plan, _ *Options) {
			if err := os.Chmod(filepath.Join(root, "proc/sys/net/ipv4/tcp_rmem"), 0o444); err != nil {
				t.Fatal(err)
			}
		}, "read-only"},
		{"duplicate key", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			p.Items = append(p.Items, p.Items[0])
		}, "appears twice"},
		{"unknown kind", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			p.Items = append(p.Items, plan.Item{Key: "x", Kind: "magic"})
		}, "unknown kind"},
		{"route metric out of range", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			for i := range p.Items {
				if p.Items[i].Route != nil {
					p.Items[i].Route.InitCwnd = 5000
				}
			}
		}, "initcwnd 5000 out of range"},
		{"route moved since the plan", func(t *testing.T, _ string, p *plan.Plan, _ *Options) {
			for i := range p.Items {
				if p.Items[i].Route != nil {
					p.Items[i].Route.Gateway = "10.0.0.99"
				}
			}
		}, "make the plan again"},
		{"persist with netns", func(t *testing.T, _ string, p *plan.Plan, o *Options) { o.Netns = "x"; o.Persist = true }, "--persist"},
		{"sysctl drop-in not ours", func(t *testing.T, root string, p *plan.Plan, o *Options) {
			o.Persist = true
			if err := os.WriteFile(filepath.Join(root, "etc/sysctl.d/90-longhaul.conf"), []byte("vm.swappiness = 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not written by longhaul"},
		{"tampered journal", func(t *testing.T, root string, p *plan.Plan, o *Options) {
			writeJournal(t, root, func(b []byte) []byte { return []byte(strings.Replace(string(b), "6291456", "6291457", 1)) })
		}, "checksum mismatch"},
		{"truncated journal", func(t *testing.T, root string, p *plan.Plan, o *Options) {
			writeJournal(t, root, func(b []byte) []byte { return b[:len(b)/2] })
		}, "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, fr, p := base(t)
			o := opts(root, fr)
			tc.mutate(t, root, &p, &o)
			before := tree(t, root)
			journals := journalFiles(t, root)
			_, err := Apply(p, o)
			if err == nil {
				t.Fatalf("apply accepted it")
			}
			if !badinput.Is(err) {
				t.Errorf("error %v is not bad input (exit 2)", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			sameTree(t, "after refusal", before, tree(t, root))
			if diff := cmp.Diff(journals, journalFiles(t, root)); diff != "" {
				t.Errorf("journal directory changed (-want +got):\n%s", diff)
			}
			if len(fr.log) != 0 {
				t.Errorf("routes changed: %q", fr.log)
			}
		})
	}
}

// writeJournal applies a plan with one change, then rewrites its journal
// with edit, leaving the host as it was.
func writeJournal(t *testing.T, root string, edit func([]byte) []byte) {
	t.Helper()
	fr := newFakeRouter(defaultRoute)
	p := makePlan(t, root, fr, plan.Request{RTT: 200e6, RateBps: 1e9, Role: plan.Client})
	o := opts(root, fr)
	if _, err := Apply(p, o); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root, "var/lib/longhaul/journal/0001.json")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
	// Restore the runtime value by hand: the journal is now unusable.
	var j struct {
		Sysctls []SysctlStep `json:"sysctls"`
	}
	if jj, err := decodeJournal(b); err == nil {
		j.Sysctls = jj.Sysctls
	}
	for _, s := range j.Sysctls {
		if err := sysctl.Write(filepath.Join(root, "proc/sys"), s.Key, s.Before); err != nil {
			t.Fatal(err)
		}
	}
}

func journalFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Join(root, "var/lib/longhaul/journal")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

func TestRollbackRefusesDamagedJournal(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"tampered", func(b []byte) []byte { return []byte(strings.Replace(string(b), `"applied"`, `"applying"`, 1)) }, "checksum mismatch"},
		{"truncated", func(b []byte) []byte { return b[:100] }, "truncated"},
		{"empty", func(b []byte) []byte { return nil }, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, hosts+"debian-13")
			writeJournal(t, root, tc.edit)
			before := tree(t, root)
			_, err := Rollback("1", Options{Root: root})
			if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("rollback: %v, want one line saying %q", err, tc.want)
			}
			sameTree(t, "after refused rollback", before, tree(t, root))
			list, err := List(Options{Root: root})
			if err != nil || len(list) != 1 || list[0].Damaged == "" {
				t.Errorf("list: %+v %v, want the journal marked damaged", list, err)
			}
			if pending, _ := Interrupted(Options{Root: root}); len(pending) != 1 {
				t.Errorf("a damaged journal is not reported at start: %+v", pending)
			}
		})
	}
}

// TestRollbackOrder: a transaction cannot be rolled back under a later
// one that changed the same key.
func TestRollbackOrder(t *testing.T) {
	root := copyTree(t, hosts+"ubuntu-2004")
	o := opts(root, nil)
	p1 := makePlan(t, root, nil, plan.Request{RTT: 100e6, RateBps: 1e9, Role: plan.Client})
	if _, err := Apply(p1, o); err != nil {
		t.Fatal(err)
	}
	p2 := makePlan(t, root, nil, plan.Request{RTT: 300e6, RateBps: 1e9, Role: plan.Client})
	if _, err := Apply(p2, o); err != nil {
		t.Fatal(err)
	}
	_, err := Rollback("1", o)
	if err == nil || !strings.Contains(err.Error(), "transaction 0002, applied later, also changed net.ipv4.tcp_rmem") {
		t.Errorf("rollback 1 under 2: %v", err)
	}
	if _, err := Rollback("", o); err != nil { // 2
		t.Fatal(err)
	}
	if _, err := Rollback("", o); err != nil { // then 1
		t.Fatal(err)
	}
	if got := readSysctl(t, root, "net.ipv4.tcp_rmem"); got != "4096 131072 6291456" {
		t.Errorf("tcp_rmem after both rollbacks: %q", got)
	}
	rep, err := Rollback("", o)
	if err != nil || !containsAll(rep.Notes, "nothing to roll back") {
		t.Errorf("third rollback: %v %q", err, rep.Notes)
	}
}

// TestApplyFailureRestores: a change the kernel refuses mid-way puts
// back what was already changed.
func TestApplyFailureRestores(t *testing.T) {
	root := copyTree(t, hosts+"debian-13")
	p := makePlan(t, root, nil, plan.Request{RTT: 200e6, RateBps: 1e9})
	before := tree(t, root)
	o := opts(root, nil)
	o.Hook = func(s string) error {
		if s == "sysctl net.ipv4.tcp_rmem" {
			// The next write (tcp_wmem) fails: its file disappears.
			return os.Remove(filepath.Join(root, "proc/sys/net/ipv4/tcp_wmem"))
		}
		return nil
	}
	wmem, _ := os.ReadFile(filepath.Join(root, "proc/sys/net/ipv4/tcp_wmem"))
	_, err := Apply(p, o)
	if err == nil || !strings.Contains(err.Error(), "restored the prior state") {
		t.Fatalf("apply: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/net/ipv4/tcp_wmem"), wmem, 0o644); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after a failed apply", before, tree(t, root))
	list, _ := List(Options{Root: root})
	if len(list) != 1 || list[0].State != StateRolledBack {
		t.Errorf("list after failure: %+v", list)
	}
}

// A transaction half done while another process holds the journal lock is
// that process's work in progress: no "interrupted" warning for it.
func TestInterruptedNotWhileLocked(t *testing.T) {
	root := hostWithNetworkd(t, "ubuntu-2004")
	fr := newFakeRouter(defaultRoute)
	p := makePlan(t, root, fr, req200ms1G)
	o := opts(root, fr)
	o.Hook = func(s string) error {
		if s == "journal" {
			return errKilled
		}
		return nil
	}
	if _, err := Apply(p, o); !errors.Is(err, errKilled) {
		t.Fatalf("apply: %v, want the simulated kill", err)
	}
	if pending, _ := Interrupted(opts(root, fr)); len(pending) != 1 {
		t.Fatalf("unlocked: %d pending, want the interrupted one", len(pending))
	}
	od, err := opts(root, fr).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := store{od.StateDir}.lock() // another apply running
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if pending, _ := Interrupted(opts(root, fr)); len(pending) != 0 {
		t.Errorf("while another apply holds the lock: %+v, want none reported", pending)
	}
}
