//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// flood opens n connections to addr from the local address src (inside
// namespace ns when ns is set), rounds times, holding each round's for
// hold: idle ones that send nothing, and every tenth half a frame header
// (a half-open handshake). Bounded: at most rounds x n dials, and it
// stops when ctx ends.
func flood(ctx context.Context, t *testing.T, ns, src, addr string, n, rounds int, hold time.Duration) (dialed int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		var conns []net.Conn
		open := func() error {
			for i := 0; i < n && ctx.Err() == nil; i++ {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue // refused or reset by the server: dial on
				}
				dialed++
				if i%10 == 0 {
					_, _ = c.Write([]byte{0, 0})
				}
				conns = append(conns, c)
			}
			return nil
		}
		if ns != "" {
			if err := netns.Do(ns, open); err != nil {
				t.Fatal(err)
			}
		} else {
			_ = open()
		}
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
		for _, c := range conns {
			c.Close()
		}
	}
	return dialed
}

// serveUnderFlood starts longhaul serve in a throwaway namespace with a
// descriptor limit of 256, as a user's `ulimit -n 256` would.
func serveUnderFlood(t *testing.T) (bin, ns, token string, stderr *lockedBuf, srv *exec.Cmd) {
	t.Helper()
	ns = nstest.New(t)
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	bin = binary(t)
	token = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("flood-test-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr = &lockedBuf{}
	srv = exec.Command("sh", "-c", `ulimit -n 256 && exec "$0" "$@"`, bin, "serve", "--netns", ns, "--auth", token,
		"--listen", "127.0.0.1:9978", "--max-duration", "20s")
	srv.Stderr = stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	})
	if err := emupath.WaitListening(context.Background(), srv, ns, 9978, "serve", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return bin, ns, token, stderr, srv
}

// A flood of idle and half-open connections from one address, closed
// and opened again, does not keep a test from another address out, nor
// stop the server, nor fill its log (issue: 64 idle connections locked
// serve, and a refused address logged 196,000 lines in 40 s).
func TestIntegrationServeFlood(t *testing.T) {
	bin, ns, token, stderr, srv := serveUnderFlood(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var dialed int
	wg.Go(func() { dialed = flood(ctx, t, ns, "127.0.0.2", "127.0.0.1:9978", 1000, 4, 2*time.Second) })
	time.Sleep(time.Second) // the flood holds its first thousand
	out, errOut, code := exe(t, bin, "test", "127.0.0.1", "--netns", ns, "--auth", token, "--download", "--streams", "0", "--duration", "1s")
	if code != 0 {
		t.Errorf("a test from 127.0.0.1 during the flood: exit %d\n%s\n%s", code, out, errOut)
	}
	cancel()
	wg.Wait()
	if err := srv.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("serve did not survive the flood: %v\n%s", err, stderr)
	}
	// Nothing was left behind: the server takes the next test at once.
	if _, errOut, code := exe(t, bin, "test", "127.0.0.1", "--netns", ns, "--auth", token, "--download", "--streams", "0", "--duration", "1s"); code != 0 {
		t.Errorf("a test after the flood: exit %d\n%s", code, errOut)
	}
	lines := strings.Count(stderr.String(), "\n")
	if lines > 20 {
		t.Errorf("%d log lines for a flood of %d connections, want a few (rate-limited):\n%.2000s", lines, dialed, stderr)
	}
	t.Logf("%d flood connections; serve logged %d lines", dialed, lines)
}

// The same for the exporter: idle connections from one address, and a
// scrape from another one succeeds (16 idle keep-alives used to time
// every scrape out).
func TestIntegrationExporterFlood(t *testing.T) {
	nstest.New(t) // root and namespaces: the exporter reads sock_diag
	bin := binary(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("flood-test-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	// With probes on, one address may hold 64 connections, not 4.
	for name, extra := range map[string][]string{"metrics": nil, "probes": {"--probe-allow", "198.18.0.0/15", "--probe-auth", token}} {
		t.Run(name, func(t *testing.T) { exporterFlood(t, bin, extra) })
	}
}

func exporterFlood(t *testing.T, bin string, extra []string) {
	addr := freePort(t)
	startExporter(t, bin, addr, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var dialed int
	wg.Go(func() { dialed = flood(ctx, t, "", "127.0.0.2", addr, 1000, 3, 2*time.Second) })
	time.Sleep(time.Second)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 5 * time.Second}
	for i := range 3 {
		t0 := time.Now()
		resp, err := c.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d during the flood: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("longhaul_")) {
			t.Errorf("scrape %d: status %d", i, resp.StatusCode)
		}
		t.Logf("scrape %d during the flood: %v", i, time.Since(t0))
		time.Sleep(500 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	t.Logf("%d flood connections from one address", dialed)
}

// lockedBuf is a bytes.Buffer safe for a process's writes and the test's
// reads.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
