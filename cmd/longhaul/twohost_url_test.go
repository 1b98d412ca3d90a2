//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// startNginx serves a sparse 1 TB file as /big from the server's end of
// the path; nginx is stopped at cleanup.
func (h *twoHosts) startNginx() {
	t := h.t
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"www", "tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "www", "big"))
	if err != nil || f.Truncate(1<<40) != nil || f.Close() != nil {
		t.Fatalf("sparse file: %v", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(`daemon off;
master_process off;
user root;
pid `+dir+`/tmp/nginx.pid;
error_log `+dir+`/logs/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    client_body_temp_path `+dir+`/tmp/body;
    proxy_temp_path `+dir+`/tmp/proxy;
    fastcgi_temp_path `+dir+`/tmp/fastcgi;
    uwsgi_temp_path `+dir+`/tmp/uwsgi;
    scgi_temp_path `+dir+`/tmp/scgi;
    server { listen `+serveAddr+`:80; root `+dir+`/www; }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	h.runNginx(dir, conf)
}

// runNginx starts nginx with conf (its prefix dir) in the server's
// namespace, stopped at the test's end, and waits for its port 80.
func (h *twoHosts) runNginx(dir, conf string) {
	t := h.t
	sv := h.path.Topo.Server()
	cmd := sv.Command(context.Background(), "nginx", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "logs", "error.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	if err := emupath.WaitListening(context.Background(), cmd, sv.Netns, 80, "nginx", 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "logs", "error.log"))
		t.Fatalf("%v\n%s", err, log)
	}
}

// testURL runs longhaul test URL in the client's namespace.
func (h *twoHosts) testURL(out string, args ...string) *testdoc.URLDoc {
	h.t.Helper()
	all := append([]string{"test", "http://" + serveAddr + "/big", "--netns", h.path.Topo.Client().Netns, "-o", out}, args...)
	stdout, stderr, code := exe(h.t, h.bin, all...)
	if code != 0 {
		h.t.Fatalf("test: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	h.t.Logf("longhaul %s\n%s", strings.Join(all, " "), stdout)
	b, err := os.ReadFile(filepath.Join(out, "test-url.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	var d testdoc.URLDoc
	if err := json.Unmarshal(b, &d); err != nil {
		h.t.Fatal(err)
	}
	return &d
}

// Ground truth for test URL against nginx (no longhaul at the far end):
// a small client tcp_rmem is named, with a client plan that raises it;
// with big client buffers and a small server tcp_wmem the limit is at
// the far end or on the path, never this host.
func TestIntegrationTestURL(t *testing.T) {
	link := emupath.Link{Down: emupath.Direction{Delay: 50 * time.Millisecond, RateBps: 100e6}, Up: emupath.Direction{Delay: 50 * time.Millisecond, RateBps: 100e6}}
	t.Run("client tcp_rmem small", func(t *testing.T) {
		h := upPath(t, link, sysctls("net.ipv4.tcp_rmem", "4096 131072 262144"), nil, "nginx")
		h.startNginx()
		out := t.TempDir()
		d := h.testURL(out, "--duration", "6s", "--rate", "100Mbit/s")
		if d.Limit.Host != testdoc.HostClient || d.Limit.Setting != "net.ipv4.tcp_rmem" {
			t.Fatalf("limit %+v; want this host's tcp_rmem", d.Limit)
		}
		ceiling := float64(d.WindowCeilingBytes) * 8 / d.LoadedRTT
		if d.SteadyBps < 0.7*ceiling || d.SteadyBps > 1.15*ceiling {
			t.Errorf("steady %.1f Mbit/s; the window ceiling %.1f Mbit/s (window %d B at %.1f ms)", d.SteadyBps/1e6, ceiling/1e6, d.WindowCeilingBytes, d.LoadedRTT*1e3)
		}
		if _, err := os.Stat(filepath.Join(out, "client-plan.json")); err != nil || d.Plan == nil {
			t.Errorf("no client plan written: %v", err)
		}
	})
	t.Run("server tcp_wmem small", func(t *testing.T) {
		h := upPath(t, link, sysctls("net.ipv4.tcp_rmem", "4096 131072 16777216"), sysctls("net.ipv4.tcp_wmem", "4096 16384 262144"), "nginx")
		h.startNginx()
		d := h.testURL(t.TempDir(), "--duration", "6s")
		if d.Limit.Host != testdoc.HostServerOrPath {
			t.Fatalf("limit %+v; want the server or the path", d.Limit)
		}
		// Held below the path: 48-61 Mbit/s in runs here against the
		// path's 94 Mbit/s of goodput. That is more than the model's
		// 0.72 x tcp_wmem + 32 KiB per round trip (18 Mbit/s; lab buffers
		// matches it with nginx and tcp_nopush on a tmpfs file): this
		// nginx, with sendfile from a disk file and no tcp_nopush, keeps
		// about 2.4 x tcp_wmem in flight (not yet explained). The test
		// is about where the limit is, not its size.
		if d.SteadyBps > 0.75*pathmodel.Goodput(100e6) {
			t.Errorf("steady %.1f Mbit/s: the server's 256 KiB send buffer should hold it well under the 100 Mbit/s path", d.SteadyBps/1e6)
		}
	})
}
