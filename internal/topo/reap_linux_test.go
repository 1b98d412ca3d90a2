//go:build linux

package topo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

func TestIntegrationCloseKillsCommands(t *testing.T) {
	topo := up(t, Spec{Prefix: newPrefix(t)})
	c := topo.Client()

	// A command that is itself a shell with a background child: Close
	// must kill both (process group), and the child is also inside the
	// namespace.
	cmd := c.Command(context.Background(), "sh", "-c", "sleep 600 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	notePID(cmd.Process.Pid)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read child pid: %v", err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	notePID(grandchild)

	if err := topo.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("command ended with %v, want killed by SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("command still running 10 s after Close")
	}
	waitGone(t, grandchild)
}

func TestIntegrationCommandContextKillsGroup(t *testing.T) {
	topo := up(t, Spec{Prefix: newPrefix(t)})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := topo.Server().Command(ctx, "sh", "-c", "sleep 600 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	notePID(cmd.Process.Pid)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read child pid: %v", err)
	}
	grandchild, _ := strconv.Atoi(strings.TrimSpace(line))
	notePID(grandchild)
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Error("Wait after cancel returned nil, want an error")
	}
	waitGone(t, grandchild)
}

// waitGone waits until pid has exited (or is a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps, err := readProcStat(pid)
		if err != nil || ps.dead() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHelperProcess is not a test: run with helperEnv set, it builds a
// topology with that prefix, starts `sleep 600` in the client namespace
// without a parent death signal (as if it had escaped its owner), prints
// "ready <sleep pid>" and blocks until killed.
func TestHelperProcess(t *testing.T) {
	prefix := os.Getenv(helperEnv)
	if prefix == "" {
		t.Skip("helper process for TestIntegrationReapAfterKill")
	}
	topo, err := Up(context.Background(), Spec{Prefix: prefix})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	cmd := topo.Client().Command(context.Background(), "sleep", "600")
	cmd.SysProcAttr.Pdeathsig = 0
	if err := cmd.Start(); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("ready %d\n", cmd.Process.Pid)
	time.Sleep(time.Hour)
}

// startOwner runs the test binary as TestHelperProcess owning a run with
// prefix and returns it with the PID of its sleep.
func startOwner(t *testing.T, prefix string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+prefix)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	notePID(cmd.Process.Pid)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "ready ") || strings.HasPrefix(l, "error ") {
				lines <- l
				return
			}
		}
		lines <- "error: helper exited: " + fmt.Sprint(sc.Err())
	}()
	select {
	case l := <-lines:
		if strings.HasPrefix(l, "error") {
			if strings.Contains(l, netns.ErrNotPermitted.Error()) {
				t.Skipf("skipping: helper: %s", l)
			}
			t.Fatalf("helper: %s", l)
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(l, "ready "))
		if err != nil {
			t.Fatalf("helper said %q", l)
		}
		notePID(pid)
		return cmd, pid
	case <-time.After(60 * time.Second):
		t.Fatal("helper not ready after 60 s")
	}
	return nil, 0
}

func TestIntegrationReapAfterKill(t *testing.T) {
	requireNetns(t)
	prefix := newPrefix(t)
	owner, sleepPID := startOwner(t, prefix)

	names, err := netns.List(prefix + "-")
	if err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(StateDir, prefix+"-*.json"))
	if len(names) != 2 || len(states) != 1 {
		t.Fatalf("owner's run: namespaces %v, state files %v; want 2 and 1", names, states)
	}
	var st state
	if b, err := os.ReadFile(states[0]); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("read state %s: %v", states[0], err)
	}
	if st.PID != owner.Process.Pid || !slices.Equal(st.Namespaces, names) {
		t.Errorf("state = %+v, want pid %d and namespaces %v", st, owner.Process.Pid, names)
	}

	t.Run("live owner is left alone", func(t *testing.T) {
		removed, err := reap(prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(removed) != 0 {
			t.Errorf("Reap removed %v of a live run", removed)
		}
		if got, _ := netns.List(prefix + "-"); !slices.Equal(got, names) {
			t.Errorf("namespaces after Reap: %v, want %v", got, names)
		}
	})

	if err := unix.Kill(owner.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	if got, _ := netns.List(prefix + "-"); !slices.Equal(got, names) {
		t.Fatalf("namespaces after SIGKILL: %v, want %v still there", got, names)
	}
	if ps, err := readProcStat(sleepPID); err != nil || ps.dead() {
		t.Fatalf("sleep %d in the namespace is gone before Reap (%v); the test needs it alive", sleepPID, err)
	}

	removed, err := reap(prefix)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	want := append(slices.Clone(names), states[0])
	slices.Sort(want)
	if diff := cmp.Diff(want, removed); diff != "" {
		t.Errorf("Reap removed (-want +got):\n%s", diff)
	}
	if got, _ := netns.List(prefix + "-"); len(got) != 0 {
		t.Errorf("namespaces after Reap: %v", got)
	}
	if _, err := os.Stat(states[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after Reap: %v, want not exist", err)
	}
	if ps, err := readProcStat(sleepPID); err == nil && !ps.dead() {
		t.Errorf("sleep %d inside the reaped namespace still running", sleepPID)
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil && bytes.Contains(out, []byte(prefix)) {
		t.Errorf("ip netns list still shows %s:\n%s", prefix, out)
	}
}

func TestIntegrationReapLeavesLiveRun(t *testing.T) {
	prefix := newPrefix(t)
	topo := up(t, Spec{Prefix: prefix})
	removed, err := reap(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Errorf("Reap removed %v of this process's run", removed)
	}
	for _, e := range []End{topo.Client(), topo.Server()} {
		if !netns.Exists(e.Netns) {
			t.Errorf("namespace %s gone after Reap", e.Netns)
		}
	}
	// A second Up with the same prefix reaps too, and must not touch the
	// first run either.
	other := up(t, Spec{Prefix: prefix})
	if other.runID == topo.runID {
		t.Fatal("two runs got the same id")
	}
	if !netns.Exists(topo.Client().Netns) {
		t.Errorf("second Up removed the first run's namespace")
	}
}

// TestIntegrationReapStates drives Reap's owner check with hand-made
// state files.
func TestIntegrationReapStates(t *testing.T) {
	requireNetns(t)
	self, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	notePID(zombie.Process.Pid)
	defer zombie.Wait()
	var zstat procStat
	for deadline := time.Now().Add(5 * time.Second); ; {
		zstat, err = readProcStat(zombie.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if zstat.dead() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("true did not exit")
		}
		time.Sleep(5 * time.Millisecond)
	}

	const noState = "-"
	tests := []struct {
		name       string
		state      string // file content; noState for none
		nsName     string // "" means <prefix>-<id>-c
		wantReaped bool
	}{
		{name: "live owner", state: stateJSON(os.Getpid(), self.StartTime, bootID())},
		{name: "exited owner", state: stateJSON(exited.Process.Pid, 1, bootID()), wantReaped: true},
		{name: "zombie owner", state: stateJSON(zombie.Process.Pid, zstat.StartTime, bootID()), wantReaped: true},
		{name: "reused pid", state: stateJSON(os.Getpid(), self.StartTime+1, bootID()), wantReaped: true},
		{name: "other boot", state: stateJSON(os.Getpid(), self.StartTime, "00000000-0000-0000-0000-000000000000"), wantReaped: true},
		{name: "no state file", state: noState, wantReaped: true},
		{name: "corrupt state file", state: "{", wantReaped: true},
		{name: "foreign name", state: noState, nsName: "%s-zz-c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix(t)
			id := "0123456789"
			ns := prefix + "-" + id + "-c"
			if tt.nsName != "" {
				ns = fmt.Sprintf(tt.nsName, prefix)
			}
			if err := netns.Create(ns); err != nil {
				t.Fatal(err)
			}
			defer netns.Delete(ns)
			path := filepath.Join(StateDir, prefix+"-"+id+".json")
			if tt.state != noState {
				if err := os.MkdirAll(StateDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.state), 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(path)
			}
			removed, err := reap(prefix)
			if err != nil {
				t.Fatalf("Reap: %v", err)
			}
			var want []string
			if tt.wantReaped {
				want = []string{ns}
				if tt.state != noState {
					want = append(want, path)
				}
				slices.Sort(want)
			}
			if diff := cmp.Diff(want, removed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Reap removed (-want +got):\n%s", diff)
			}
			if got := netns.Exists(ns); got == tt.wantReaped {
				t.Errorf("namespace %s exists = %v after Reap, want %v", ns, got, !tt.wantReaped)
			}
		})
	}
}

func stateJSON(pid int, start uint64, boot string) string {
	b, _ := json.Marshal(state{Version: stateVersion, PID: pid, StartTime: start, BootID: boot})
	return string(b)
}
