//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// startIperf3 runs Debian's iperf3 server at the server's end of the
// path (with -J when asJSON), stopped by its PID at cleanup.
func (h *twoHosts) startIperf3(asJSON bool) {
	t := h.t
	t.Helper()
	args := []string{"-s", "-B", serveAddr, "-p", "5201"}
	if asJSON {
		args = append(args, "-J")
	}
	sv := h.path.Topo.Server()
	cmd := sv.Command(context.Background(), "iperf3", args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := emupath.WaitListening(context.Background(), cmd, sv.Netns, 5201, "iperf3 -s", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// testIperf3 runs longhaul test iperf3:// in the client's namespace and
// checks that report renders what it wrote.
func (h *twoHosts) testIperf3(out string, args ...string) *testdoc.Doc {
	h.t.Helper()
	all := append([]string{"test", "iperf3://" + serveAddr, "--netns", h.path.Topo.Client().Netns, "-o", out, "--streams", "0"}, args...)
	stdout, stderr, code := exe(h.t, h.bin, all...)
	if code != 0 {
		h.t.Fatalf("test: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	h.t.Logf("longhaul %s\n%s", strings.Join(all, " "), stdout)
	f, err := os.Open(filepath.Join(out, "test.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	d, err := testdoc.Read(f)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, stderr, code := exe(h.t, h.bin, "report", filepath.Join(out, "test.json"), "-o", filepath.Join(out, "report.html")); code != 0 {
		h.t.Errorf("report of test.json: exit %d: %s", code, stderr)
	}
	return d
}

// Ground truth for test iperf3:// against Debian's iperf3 server: each
// case's limit is known by construction (a small buffer at one end, a
// lossy path), and the judge must name that host and setting, the far
// host's window with its size, or the path's loss.
func TestIntegrationTestIperf3(t *testing.T) {
	link := emupath.Link{Down: emupath.Direction{Delay: 25 * time.Millisecond, RateBps: 100e6}, Up: emupath.Direction{Delay: 25 * time.Millisecond, RateBps: 100e6}}
	small := "4096 65536 262144"
	big := "4096 131072 33554432"
	t.Run("download client tcp_rmem", func(t *testing.T) {
		h := upPath(t, link, sysctls("net.ipv4.tcp_rmem", small), sysctls("net.ipv4.tcp_wmem", big), "iperf3")
		h.startIperf3(true)
		out := filepath.Join(h.dir, "out")
		d := h.testIperf3(out, "--download", "--duration", "4s", "--rate", "100Mbit/s")
		down := direction(t, d, "download")
		if down.Limit.Host != testdoc.HostClient || down.Limit.Setting != "net.ipv4.tcp_rmem" {
			t.Fatalf("download limit %+v; want this host's net.ipv4.tcp_rmem", down.Limit)
		}
		if _, err := os.Stat(filepath.Join(out, "client-plan.json")); err != nil || d.Plans == nil {
			t.Errorf("no client plan written: %v", err)
		}
	})
	t.Run("upload client tcp_wmem", func(t *testing.T) {
		h := upPath(t, link, sysctls("net.ipv4.tcp_wmem", "4096 16384 262144"), sysctls("net.ipv4.tcp_rmem", big), "iperf3")
		h.startIperf3(true)
		d := h.testIperf3(filepath.Join(h.dir, "out"), "--upload", "--duration", "4s")
		up := direction(t, d, "upload")
		if up.Limit.Host != testdoc.HostClient || up.Limit.Setting != "net.ipv4.tcp_wmem" {
			t.Fatalf("upload limit %+v (verdict %s); want this host's net.ipv4.tcp_wmem", up.Limit, up.Flow.Verdict.Verdict)
		}
	})
	t.Run("upload server receive window", func(t *testing.T) {
		h := upPath(t, link, sysctls("net.ipv4.tcp_wmem", big), sysctls("net.ipv4.tcp_rmem", small), "iperf3")
		h.startIperf3(true)
		d := h.testIperf3(filepath.Join(h.dir, "out"), "--upload", "--duration", "4s")
		up := direction(t, d, "upload")
		if up.Limit.Host != testdoc.HostServer || !strings.Contains(up.Limit.Text, "receive window (") || up.Limit.Value == "" {
			t.Fatalf("upload limit %+v (verdict %s); want the server's receive window with its size", up.Limit, up.Flow.Verdict.Verdict)
		}
	})
	lossy := emupath.Symmetric(50*time.Millisecond, 100e6, 0.01, 0, 1)
	for _, asJSON := range []bool{true, false} {
		name := "lossy path, iperf3 -s -J"
		if !asJSON {
			name = "lossy path, plain iperf3 -s"
		}
		t.Run(name, func(t *testing.T) {
			h := upPath(t, lossy, sysctls("net.ipv4.tcp_rmem", big, "net.ipv4.tcp_wmem", big), sysctls("net.ipv4.tcp_rmem", big, "net.ipv4.tcp_wmem", big), "iperf3")
			h.startIperf3(asJSON)
			d := h.testIperf3(filepath.Join(h.dir, "out"), "--duration", "4s")
			for _, name := range []string{"download", "upload"} {
				dir := direction(t, d, name)
				if dir.Limit.Host != testdoc.HostPath || !strings.Contains(dir.Limit.Text, "loss") {
					t.Errorf("%s limit %+v (verdict %s); want the path's loss", name, dir.Limit, dir.Flow.Verdict.Verdict)
				}
			}
			if plain := strings.Contains(strings.Join(d.Notes, "\n"), "plain iperf3 -s"); plain == asJSON {
				t.Errorf("notes %q: the plain server's missing RTT said %v, want %v", d.Notes, plain, !asJSON)
			}
		})
	}
	t.Run("busy server", func(t *testing.T) {
		h := upPath(t, link, nil, nil, "iperf3")
		h.startIperf3(false)
		other := h.path.Topo.Client().Command(context.Background(), "iperf3", "-c", serveAddr, "-t", "6")
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = other.Process.Kill()
			_ = other.Wait()
		})
		time.Sleep(1500 * time.Millisecond)
		_, stderr, code := exe(t, h.bin, "test", "iperf3://"+serveAddr, "--netns", h.path.Topo.Client().Netns, "--duration", "2s")
		if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") > 1 || !strings.Contains(stderr, "is busy running a test; try again later") {
			t.Errorf("exit %d, stderr %q; want 1 and the busy server's one line", code, stderr)
		}
	})
}
