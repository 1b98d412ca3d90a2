package topo

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeCCHost is a sysctl tree with the two congestion-control keys and a
// record directory, both temporary.
func fakeCCHost(t *testing.T, allowed string) ccStore {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "proc", "sys", "net", "ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"tcp_available_congestion_control": "reno cubic bbr", "tcp_allowed_congestion_control": allowed} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ccStore{dir: filepath.Join(root, "run"), sysRoot: filepath.Join(root, "proc", "sys")}
}

func allowedOf(t *testing.T, c ccStore) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.sysRoot, "net", "ipv4", "tcp_allowed_congestion_control"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestAllowCCSharedAndRestored(t *testing.T) {
	c := fakeCCHost(t, "reno bbr")
	r1, err := c.allow("cubic", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := allowedOf(t, c); got != "reno bbr cubic" {
		t.Fatalf("widened list %q", got)
	}
	// A second run relying on the same widening: the host's setting is
	// not written again (nor when the first lets go).
	file := filepath.Join(c.sysRoot, "net", "ipv4", "tcp_allowed_congestion_control")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	r2, err := c.allow("cubic", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r1()
	if fi, err := os.Stat(file); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the allowed list was written again for a widening already in place (%v)", err)
	}
	if got := allowedOf(t, c); got != "reno bbr cubic" {
		t.Errorf("first run's end narrowed the list under the second: %q", got)
	}
	r2()
	if got := allowedOf(t, c); got != "reno bbr" {
		t.Errorf("after both runs: %q, want the host's own", got)
	}
	if _, err := os.Stat(filepath.Join(c.dir, ccFile)); !os.IsNotExist(err) {
		t.Errorf("record left behind: %v", err)
	}
	// A cc the host allows on its own changes nothing.
	r3, err := c.allow("bbr", io.Discard)
	if err != nil || allowedOf(t, c) != "reno bbr" {
		t.Errorf("allowed cc: %v, list %q", err, allowedOf(t, c))
	}
	r3()
	if _, err := c.allow("vegas", io.Discard); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("unavailable cc: %v", err)
	}
}

func TestAllowCCKilledHolderReaped(t *testing.T) {
	c := fakeCCHost(t, "reno bbr")
	// A run that was killed: its holder is a process that exited.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := ccHolder{CC: "cubic", PID: cmd.Process.Pid, StartTime: 1}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.save(&ccRecord{Version: 1, Original: "reno bbr", Holders: []ccHolder{dead}}); err != nil {
		t.Fatal(err)
	}
	if err := c.write(&ccRecord{Original: "reno bbr", Holders: []ccHolder{dead}}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	restore, err := c.allow("", &log)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if got := allowedOf(t, c); got != "reno bbr" || !strings.Contains(log.String(), "killed") {
		t.Errorf("after reaping: list %q, log %q", got, log.String())
	}
	// A damaged record is reported, not guessed at.
	if err := os.WriteFile(filepath.Join(c.dir, ccFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.allow("cubic", io.Discard); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged record: %v", err)
	}
}
