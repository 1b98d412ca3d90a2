package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// The documented pipe (docs/exit-status.md) `ssh far longhaul audit --json | longhaul plan
// --snapshot -`, with a far host whose name, kernel release and
// congestion control carry an OSC 52 clipboard write, an OSC title, CSI
// colours and a C1 CSI: nothing of it reaches the admin's terminal as a
// control, on stdout, on stderr or in the error line, whichever command
// reads the snapshot.
func TestFarSnapshotCannotWriteToTheTerminal(t *testing.T) {
	bin := binary(t)
	doc := farSnapshot(t, bin)
	const evil = "far\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;owned\x07\x1b[41m\u009b2J"
	host := doc["host"].(map[string]any)
	host["hostname"] = evil
	host["kernel"].(map[string]any)["release"] = "6.1.0-" + evil
	sys := host["sysctls"].(map[string]any)
	sys["kernel.hostname"], sys["kernel.osrelease"], sys["net.ipv4.tcp_congestion_control"] = evil, "6.1.0-"+evil, "cubic"+evil
	snap, _ := json.Marshal(doc)
	for _, args := range [][]string{
		{"plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"audit", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "--emit", "sysctl.d"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = bytes.NewReader(snap)
		stdout, stderr, code := runCmd(t, cmd)
		shown := stdout + stderr
		if code > 3 || shown == "" {
			t.Errorf("%v: exit %d, nothing shown", args, code)
		}
		if !utf8.ValidString(shown) {
			t.Errorf("%v: output is not UTF-8: %q", args, shown)
			continue
		}
		for _, r := range shown {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
				t.Errorf("%v: the output carries %U:\n%q", args, r, shown)
				break
			}
		}
		if strings.Contains(strings.Join(args, " "), "emit") {
			continue // refused: the name is not one a host can have
		}
		if !strings.Contains(shown, `far\u001b]52;c;`) {
			t.Errorf("%v: the far host's name is not shown, escaped:\n%s", args, shown)
		}
	}
}

// A SIGKILLed emulate takes its --server command's children with it: a
// daemon the server line forked is gone within seconds, not left running
// until a later run reaps the namespace.
func TestIntegrationEmulateKilledServerGrandchild(t *testing.T) {
	bin, prefix := emulateEnv(t, "iperf3")
	mark := fmt.Sprintf("%d", 30000+time.Now().UnixNano()%10000) // sleep's argument: finds it in /proc
	line := "sleep " + mark + " & exec iperf3 -s -p 5299"
	cmd := exec.Command(bin, "emulate", "--prefix", prefix, "--rtt", "10ms", "--server", line, "--", "sleep", "60")
	// A file, not a pipe: a surviving grandchild would hold a pipe open
	// and Wait with it.
	errOut, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errOut.Close()
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	grandchild := func() int {
		for _, pid := range pidsRunning("sleep\x00" + mark + "\x00") {
			return pid
		}
		return 0
	}
	deadline := time.Now().Add(20 * time.Second)
	for grandchild() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	gc := grandchild()
	if gc == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b, _ := os.ReadFile(errOut.Name())
		t.Fatalf("the server's child never started: %s", b)
	}
	t.Cleanup(func() {
		if alive(gc) {
			_ = syscall.Kill(gc, syscall.SIGKILL) // the process this test made, by PID
		}
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline = time.Now().Add(3 * time.Second)
	for alive(gc) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(gc) {
		t.Errorf("the --server command's child (pid %d) still runs 3 s after emulate was SIGKILLed", gc)
	}
	// The next start reaps the namespaces the killed run left.
	if _, errOut, code := exe(t, bin, "emulate", "--prefix", prefix, "--rtt", "1ms", "--", "true"); code != 0 {
		t.Errorf("next run: exit %d: %s", code, errOut)
	}
}

// pidsRunning lists the processes whose command line is cmdline
// (arguments ended by NUL each).
func pidsRunning(cmdline string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == cmdline && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
