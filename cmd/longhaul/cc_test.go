package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/sysctl"
)

const allowedCC = "net.ipv4.tcp_allowed_congestion_control"

// narrowAllowedCC takes cubic out of the host's allowed list for the
// test, so that emulate --cc cubic must widen it, and puts the host's
// list back at the end whatever happens.
func narrowAllowedCC(t *testing.T) string {
	t.Helper()
	orig, err := sysctl.Read(sysctl.DefaultRoot, allowedCC)
	if err != nil {
		t.Skipf("read %s: %v", allowedCC, err)
	}
	var keep []string
	for _, cc := range strings.Fields(orig) {
		if cc != "cubic" {
			keep = append(keep, cc)
		}
	}
	narrow := strings.Join(keep, " ")
	if err := sysctl.Write(sysctl.DefaultRoot, allowedCC, narrow); err != nil {
		t.Skipf("cannot change %s: %v", allowedCC, err)
	}
	t.Cleanup(func() { _ = sysctl.Write(sysctl.DefaultRoot, allowedCC, orig) })
	return narrow
}

func currentAllowed(t *testing.T) string {
	t.Helper()
	v, err := sysctl.Read(sysctl.DefaultRoot, allowedCC)
	if err != nil {
		t.Fatal(err)
	}
	return sysctl.Normalize(v)
}

// A run killed while it had widened the host's allowed congestion
// controls is undone by the next start; two runs sharing a widening leave
// the list as found.
func TestIntegrationEmulateCCKilledRestored(t *testing.T) {
	bin, prefix := emulateEnv(t)
	narrow := narrowAllowedCC(t)
	cmd := exec.Command(bin, "emulate", "--prefix", prefix, "--cc", "cubic", "--rtt", "10ms", "--", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(currentAllowed(t), "cubic") {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(currentAllowed(t), "cubic") {
		_ = cmd.Process.Kill()
		t.Fatalf("emulate --cc cubic never widened %s (%q)", allowedCC, currentAllowed(t))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if got := currentAllowed(t); !strings.Contains(got, "cubic") {
		t.Fatalf("the killed run restored the list itself (%q): the test proves nothing", got)
	}
	_, errOut, code := exe(t, bin, "emulate", "--prefix", prefix, "--rtt", "1ms", "--", "true")
	if code != 0 {
		t.Fatalf("next run: exit %d: %s", code, errOut)
	}
	if got := currentAllowed(t); got != narrow {
		t.Errorf("after the next start %s = %q, want the host's %q", allowedCC, got, narrow)
	}
	if !strings.Contains(errOut, "killed") {
		t.Errorf("the next start did not say it restored the list: %s", errOut)
	}

	// Two concurrent runs: the first to end must not narrow the list
	// under the second, and the last leaves it as found.
	long := exec.Command(bin, "emulate", "--prefix", prefix, "--cc", "cubic", "--rtt", "10ms", "--", "sleep", "3")
	long.Stderr = os.Stderr
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_, errOut, code = exe(t, bin, "emulate", "--prefix", prefix+"b", "--cc", "cubic", "--rtt", "10ms", "--", "sh", "-c",
		"grep -qw cubic /proc/sys/net/ipv4/tcp_congestion_control")
	if code != 0 {
		t.Errorf("second run: exit %d (its namespaces did not use cubic?): %s", code, errOut)
	}
	if got := currentAllowed(t); !strings.Contains(got, "cubic") && long.ProcessState == nil {
		t.Errorf("the second run's end narrowed the list while the first still runs: %q", got)
	}
	if err := long.Wait(); err != nil {
		t.Errorf("first run: %v", err)
	}
	if got := currentAllowed(t); got != narrow {
		t.Errorf("after both runs %s = %q, want the host's %q", allowedCC, got, narrow)
	}
}
