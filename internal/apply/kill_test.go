//go:build linux || darwin

package apply

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/plan"
)

// TestMain doubles as the child of TestApplyKilledForReal: with
// LONGHAUL_TEST_KILL_AT set it applies a plan and SIGKILLs itself at
// that step, as a crash or kill -9 would.
func TestMain(m *testing.M) {
	if stop := os.Getenv("LONGHAUL_TEST_KILL_AT"); stop != "" {
		os.Exit(killedApply(stop, os.Getenv("LONGHAUL_TEST_ROOT"), os.Getenv("LONGHAUL_TEST_PLAN")))
	}
	os.Exit(m.Run())
}

func killedApply(stop, root, planFile string) int {
	b, err := os.ReadFile(planFile)
	if err != nil {
		return 10
	}
	var p plan.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return 11
	}
	o := Options{Root: root, Persist: true, Hook: func(s string) error {
		if s == stop {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		return nil
	}}
	if _, err := Apply(p, o); err != nil {
		return 12
	}
	return 13 // the step never came
}

// TestApplyKilledForReal SIGKILLs a real apply process at every step
// boundary; rollback in this process then restores the tree byte for
// byte (and finds the journal lock released by the kernel).
func TestApplyKilledForReal(t *testing.T) {
	req := plan.Request{RTT: 200 * time.Millisecond, RateBps: 1e9}
	var all []string
	{
		root := copyTree(t, hosts+"ubuntu-2004")
		o := Options{Root: root, Persist: true, Hook: func(s string) error { all = append(all, s); return nil }}
		if _, err := Apply(makePlan(t, root, nil, req), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, stop := range all {
		t.Run(stop, func(t *testing.T) {
			root := copyTree(t, hosts+"ubuntu-2004")
			p := makePlan(t, root, nil, req)
			b, _ := json.Marshal(p)
			planFile := filepath.Join(t.TempDir(), "plan.json")
			if err := os.WriteFile(planFile, b, 0o644); err != nil {
				t.Fatal(err)
			}
			before := tree(t, root)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LONGHAUL_TEST_KILL_AT="+stop, "LONGHAUL_TEST_ROOT="+root, "LONGHAUL_TEST_PLAN="+planFile)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want killed by SIGKILL", err)
			}
			pending, err := Interrupted(Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if stop != "applied" && len(pending) != 1 {
				t.Errorf("killed at %q: interrupted transactions %+v, want 1", stop, pending)
			}
			if _, err := Rollback("", Options{Root: root}); err != nil {
				t.Fatal(err)
			}
			sameTree(t, "after rollback", before, tree(t, root))
		})
	}
}
