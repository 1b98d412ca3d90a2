package topo

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Narrowing takes out what the runs added and nothing else: a change
// someone else made to the list meanwhile (an operator, a run whose
// record lives under another /run) stays (issue 53).
func TestAllowCCKeepsOthersChanges(t *testing.T) {
	c := fakeCCHost(t, "reno bbr")
	restore, err := c.allow("cubic", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.sysRoot, "net", "ipv4", "tcp_allowed_congestion_control")
	if err := os.WriteFile(file, []byte("reno bbr cubic htcp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	restore()
	if got := allowedOf(t, c); got != "reno bbr htcp" {
		t.Errorf("after the run: %q, want %q (its cubic out, the other change kept)", got, "reno bbr htcp")
	}
}

// ccChildEnv names the fake host a child process (TestAllowCCChild)
// works on: the record directory and the sysctl root.
const ccChildEnv = "LONGHAUL_TEST_CC_STORE"

// Runs in separate processes (each its own holder, as two longhaul runs
// are) widen the same fake host at once and leave in any order: each
// finds its cc allowed until it lets go, and the last one out leaves the
// host's own list and no record.
func TestAllowCCConcurrentProcesses(t *testing.T) {
	c := fakeCCHost(t, "reno bbr")
	avail := filepath.Join(c.sysRoot, "net", "ipv4", "tcp_available_congestion_control")
	if err := os.WriteFile(avail, []byte("reno cubic bbr htcp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		cc    string
	}
	var kids []*child
	for _, cc := range []string{"cubic", "cubic", "htcp", "cubic"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAllowCCChild$")
		cmd.Env = append(os.Environ(), ccChildEnv+"="+c.dir+"|"+c.sysRoot+"|"+cc)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		k := &child{cmd: cmd, stdin: in, cc: cc}
		kids = append(kids, k)
		t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
		go func() { _, _ = io.Copy(io.Discard, out) }()
	}
	// Started together, they take the lock in any order: once the
	// record names all four, let them go one by one in another order.
	waitAllowed := func(want []string) {
		t.Helper()
		for range 500 {
			got := strings.Fields(allowedOf(t, c))
			if !slices.ContainsFunc(want, func(cc string) bool { return !slices.Contains(got, cc) }) {
				return
			}
			sleepBriefly()
		}
		t.Fatalf("list %q never held %v", allowedOf(t, c), want)
	}
	waitAllowed([]string{"cubic", "htcp"})
	waitHolders(t, c, len(kids))
	for _, i := range []int{1, 2, 0, 3} {
		k := kids[i]
		k.stdin.Close()
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("child %d (%s): %v", i, k.cc, err)
		}
		var still []string
		for j, o := range kids {
			if o.cmd.ProcessState == nil && j != i {
				still = append(still, o.cc)
			}
		}
		got := strings.Fields(allowedOf(t, c))
		for _, cc := range still {
			if !slices.Contains(got, cc) {
				t.Errorf("child %d's exit took %s out from under a live run: %q", i, cc, got)
			}
		}
		if !slices.Contains(still, "htcp") && slices.Contains(got, "htcp") {
			t.Errorf("htcp still allowed after its run ended: %q", got)
		}
	}
	if got := allowedOf(t, c); got != "reno bbr" {
		t.Errorf("after every run: %q, want the host's own %q", got, "reno bbr")
	}
	if _, err := os.Stat(filepath.Join(c.dir, ccFile)); !os.IsNotExist(err) {
		t.Errorf("record left behind: %v", err)
	}
}

func sleepBriefly() { time.Sleep(10 * time.Millisecond) }

// waitHolders waits until the record names n holders.
func waitHolders(t *testing.T, c ccStore, n int) {
	t.Helper()
	for range 500 {
		if rec, err := c.load(); err == nil && rec != nil && len(rec.Holders) == n {
			return
		}
		sleepBriefly()
	}
	rec, err := c.load()
	t.Fatalf("record %+v (%v): want %d holders", rec, err, n)
}

// TestAllowCCChild is one run of TestAllowCCConcurrentProcesses: it
// widens the fake host for its cc, holds it until its standard input
// closes, checks the cc is still allowed, and lets go.
func TestAllowCCChild(t *testing.T) {
	env := os.Getenv(ccChildEnv)
	if env == "" {
		t.Skip("a child of TestAllowCCConcurrentProcesses")
	}
	f := strings.Split(env, "|")
	c := ccStore{dir: f[0], sysRoot: f[1]}
	restore, err := c.allow(f[2], io.Discard)
	if err != nil {
		fmt.Fprintln(os.Stderr, "allow:", err)
		os.Exit(1)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if !slices.Contains(strings.Fields(allowedOf(t, c)), f[2]) {
		fmt.Fprintf(os.Stderr, "%s no longer allowed while held: %q\n", f[2], allowedOf(t, c))
		os.Exit(1)
	}
	restore()
	os.Exit(0)
}

// The host's own list reads the same while a run holds a widening and
// after it lets go: a check that a test left the host as found does not
// take another run's widening for its own change.
func TestHostAllowedWithoutWidenings(t *testing.T) {
	c := fakeCCHost(t, "reno bbr")
	if got, err := c.hostAllowed(); err != nil || got != "reno bbr" {
		t.Fatalf("no run: %q, %v", got, err)
	}
	restore, err := c.allow("cubic", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.hostAllowed(); err != nil || got != "reno bbr" || allowedOf(t, c) != "reno bbr cubic" {
		t.Errorf("while a run holds cubic: own %q (%v), live %q", got, err, allowedOf(t, c))
	}
	restore()
	if got, _ := c.hostAllowed(); got != "reno bbr" {
		t.Errorf("after: %q", got)
	}
}
