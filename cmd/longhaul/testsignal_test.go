//go:build linux

package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C during a phase ends test within a second or two with status 130,
// starts no further phase, and leaves the server free for the next test
// (test used to run the phase out: exit 130 after 27.6 s of a 20 s phase,
// the next phase started after the signal).
func TestIntegrationTestInterrupted(t *testing.T) {
	bin, ns, token, _, _ := serveUnderFlood(t)
	cmd := exec.Command(bin, "test", "127.0.0.1", "--netns", ns, "--auth", token, "--duration", "6s", "--streams", "0")
	var stderr lockedBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first phase to run, then interrupt it.
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(stderr.String(), "download: 1 stream"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no phase started:\n%s", stderr.String())
		}
	}
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(t0)
	code := cmd.ProcessState.ExitCode()
	if code != 130 || took > 3*time.Second {
		t.Errorf("after SIGINT: exit %d (%v) in %v, want 130 within 3 s\n%s", code, err, took, stderr.String())
	}
	if strings.Contains(stderr.String(), "upload: 1 stream") {
		t.Errorf("a phase started after the signal:\n%s", stderr.String())
	}
	// The server let the session go: the next test runs at once.
	if _, errOut, code := exe(t, bin, "test", "127.0.0.1", "--netns", ns, "--auth", token, "--download", "--streams", "0", "--duration", "1s"); code != 0 {
		t.Errorf("a test after the interrupted one: exit %d\n%s", code, errOut)
	}
	t.Logf("exit %d %v after SIGINT; stderr:\n%s", code, took, stderr.String())
}
