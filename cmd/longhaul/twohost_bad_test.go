//go:build linux

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// Bad input for test: each case gives one clear line on stderr, exit 1
// or 2, and leaves nothing running. All traffic stays inside a
// throwaway namespace (its loopback; 198.18.0.9 has no route there).
func TestIntegrationTestBadInput(t *testing.T) {
	ns := nstest.New(t)
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	bin := binary(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("bad-input-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A real server with a short --max-duration, and a server of another
	// protocol version.
	srv := exec.Command(bin, "serve", "--netns", ns, "--auth", token, "--listen", "127.0.0.1:9978", "--max-duration", "6s")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		if err := srv.Wait(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	if err := emupath.WaitListening(context.Background(), srv, ns, 9978, "serve", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fake := otherVersionServer(t, ns, "127.0.0.1:9979")
	defer fake.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable host", []string{"198.18.0.9"}, 1, "cannot reach 198.18.0.9:9978"},
		{"wrong port", []string{"127.0.0.1:1"}, 1, "connection refused: is longhaul serve running there"},
		{"other protocol version", []string{"127.0.0.1:9979"}, 1, "speaks longhaul test protocol version 2, this longhaul speaks 1"},
		{"path too long for the caps", []string{"127.0.0.1", "--rounds", "100000"}, 2, "the path is too long for the server's caps"},
		{"no token", []string{"127.0.0.1", "--auth", ""}, 2, "needs --auth"},
		{"bad host", []string{"host/x"}, 2, "is not HOST or HOST:PORT"},
		{"rounds and duration", []string{"127.0.0.1", "--rounds", "5", "--duration", "3s"}, 2, "give one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"test", "--netns", ns, "--auth", token}, tc.args...)
			t0 := time.Now()
			_, errOut, code := exe(t, bin, args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.Contains(last, tc.want) || !strings.HasPrefix(last, "longhaul: ") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and a last line with %q", code, errOut, tc.code, tc.want)
			}
			for _, l := range lines[:len(lines)-1] { // progress lines only
				if !strings.HasPrefix(l, "longhaul: connected") {
					t.Errorf("extra stderr line %q", l)
				}
			}
			if el := time.Since(t0); el > 15*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
	// Nothing was left behind: the server takes the next test at once.
	out, errOut, code := exe(t, bin, "test", "127.0.0.1", "--netns", ns, "--auth", token, "--download", "--streams", "0", "--duration", "1s")
	if code != 0 {
		t.Errorf("a good test after the bad ones: exit %d\n%s\n%s", code, out, errOut)
	}
}

// otherVersionServer answers every connection in ns with a hello of
// protocol version 2.
func otherVersionServer(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	err := netns.Do(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			body := `{"v":2,"type":"hello","body":{"proto":2,"nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}`
			b := append([]byte{0, 0, 0, byte(len(body))}, body...)
			_, _ = c.Write(b)
			c.Close()
		}
	}()
	return ln
}
