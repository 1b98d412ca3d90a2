package iperf3

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// realServer is a real iperf3 server on loopback for one test (-1).
type realServer struct {
	addr string
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

// startIperf3 starts `iperf3 -s -1` on a free loopback port and kills it by
// its PID when the test ends. It skips when iperf3 is not installed.
// --idle-timeout makes a server that was never used exit by itself should
// the test binary die before its cleanup.
func startIperf3(t *testing.T, extra ...string) *realServer {
	t.Helper()
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 is not installed")
	}
	port := freePort(t)
	args := append([]string{"-s", "-1", "-B", "127.0.0.1", "-p", fmt.Sprint(port), "--idle-timeout", "60"}, extra...)
	cmd := exec.Command(bin, args...)
	out := &bytes.Buffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("iperf3 %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	// Wait for the listening socket in /proc rather than by connecting:
	// a probe connection would be the one test -1 allows.
	deadline := time.Now().Add(5 * time.Second)
	for !listening(port) {
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 did not listen on %d: %s", port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &realServer{addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, out: out}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// listening reports whether /proc/net/tcp lists a listener on 127.0.0.1:port.
func listening(port int) bool {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == want && f[3] == "0A" {
			return true
		}
	}
	return false
}
