//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// uploadNginx is nginx in the server's namespace with /upload reading
// the whole body before answering (proxied to a server of its own that
// answers 200, as the lab's upload workload does), listening on port 80
// and, with TLS files, 443; rcvbuf > 0 sets the listening sockets'
// SO_RCVBUF (listen ... rcvbuf=, the field report's server).
func (h *twoHosts) uploadNginx(rcvbuf int, cert, key string) {
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
	opt := ""
	if rcvbuf > 0 {
		opt = fmt.Sprintf(" rcvbuf=%d", rcvbuf)
	}
	listen := "listen " + serveAddr + ":80" + opt + ";"
	if cert != "" {
		listen += "\n        listen " + serveAddr + ":443 ssl" + opt + ";\n        ssl_certificate " + cert + ";\n        ssl_certificate_key " + key + ";"
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
    client_body_temp_path `+dir+`/tmp/body;
    proxy_temp_path `+dir+`/tmp/proxy;
    fastcgi_temp_path `+dir+`/tmp/fastcgi;
    uwsgi_temp_path `+dir+`/tmp/uwsgi;
    scgi_temp_path `+dir+`/tmp/scgi;
    server {
        `+listen+`
        root `+dir+`/www;
        location /upload {
            client_max_body_size 1g;
            client_body_buffer_size 16m;
            proxy_pass http://127.0.0.1:8081;
        }
        location /moved { return 301 /upload; }
    }
    server {
        listen 127.0.0.1:8081;
        location / { return 200 "stored\n"; }
    }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	h.runNginx(dir, conf)
}

// testUpload runs longhaul test URL --upload in the client's namespace
// and reads its -o document; env is added to longhaul's environment.
func (h *twoHosts) testUpload(url string, env []string, args ...string) (*testdoc.URLDoc, string) {
	h.t.Helper()
	out := h.t.TempDir()
	all := append([]string{"test", url, "--upload", "--netns", h.path.Topo.Client().Netns, "-o", out}, args...)
	cmd := exec.Command(h.bin, all...)
	cmd.Env = append(os.Environ(), env...)
	stdout, stderr, code := runCmd(h.t, cmd)
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
	if d.Direction != testdoc.URLUpload || d.Flow == nil {
		h.t.Fatalf("direction %q, flow %v: not an upload's document", d.Direction, d.Flow)
	}
	return &d, out
}

// uploadLink is the lab's upload path: 35 ms, 100 Mbit/s.
var uploadLink = emupath.Link{Down: emupath.Direction{Delay: 17500 * time.Microsecond, RateBps: 100e6},
	Up: emupath.Direction{Delay: 17500 * time.Microsecond, RateBps: 100e6}}

// wantServerWindow checks that an upload names the server's advertised
// window, with its size as the socket saw it.
func wantServerWindow(t *testing.T, d *testdoc.URLDoc) {
	t.Helper()
	if d.Limit.Host != testdoc.HostServer || d.Limit.Setting != "SO_RCVBUF" {
		t.Fatalf("limit %+v (verdict %s); want the server's SO_RCVBUF", d.Limit, d.Flow.Verdict.Verdict)
	}
	// rcvbuf=2920: the kernel doubles SO_RCVBUF and advertises about
	// half of it.
	if d.PeerWindowBytes < 1000 || d.PeerWindowBytes > 6000 {
		t.Errorf("the server's window %d bytes; want about 2920", d.PeerWindowBytes)
	}
	if size := units.FormatBytes(float64(d.PeerWindowBytes)); !strings.Contains(d.Limit.Text, "receive window ("+size+")") {
		t.Errorf("limit %q does not give the window's size %s", d.Limit.Text, size)
	}
}

// Ground truth for test URL --upload against nginx on the lab's upload
// path (the field report: 605 KB took 8 s because the server advertised
// a 2.9 KB window), judged from this host's sending socket alone, no
// capture: the server's small SO_RCVBUF is named with its window's size
// over HTTP and HTTPS; this host's small tcp_wmem is named with a plan
// that raises it; with big buffers at both ends neither host is named.
// Each run is bounded to 3-4 s.
func TestIntegrationTestURLUpload(t *testing.T) {
	t.Run("server rcvbuf small", func(t *testing.T) {
		h := upPath(t, uploadLink, nil, nil, "nginx")
		h.uploadNginx(2920, "", "")
		d, _ := h.testUpload("http://"+serveAddr+"/upload", nil, "--size", "605kB", "--duration", "3s")
		wantServerWindow(t, d)
	})
	t.Run("server rcvbuf small, https", func(t *testing.T) {
		h := upPath(t, uploadLink, nil, nil, "nginx")
		cert, key := ipCert(t, serveAddr)
		h.uploadNginx(2920, cert, key)
		d, _ := h.testUpload("https://"+serveAddr+"/upload", []string{"SSL_CERT_FILE=" + cert}, "--size", "605kB", "--duration", "3s", "--method", "PUT")
		wantServerWindow(t, d)
	})
	t.Run("client tcp_wmem small", func(t *testing.T) {
		h := upPath(t, uploadLink, sysctls("net.ipv4.tcp_wmem", "4096 16384 65536"), sysctls("net.ipv4.tcp_rmem", "4096 131072 16777216"), "nginx")
		h.uploadNginx(0, "", "")
		d, out := h.testUpload("http://"+serveAddr+"/upload", nil, "--duration", "3s", "--rate", "100Mbit/s")
		if d.Limit.Host != testdoc.HostClient || d.Limit.Setting != "net.ipv4.tcp_wmem" {
			t.Fatalf("limit %+v (verdict %s); want this host's tcp_wmem", d.Limit, d.Flow.Verdict.Verdict)
		}
		if _, err := os.Stat(filepath.Join(out, "client-plan.json")); err != nil || d.Plan == nil {
			t.Errorf("no plan for this host written: %v", err)
		}
	})
	t.Run("big buffers", func(t *testing.T) {
		big := "4096 131072 16777216"
		h := upPath(t, uploadLink, sysctls("net.ipv4.tcp_wmem", big), sysctls("net.ipv4.tcp_rmem", big), "nginx")
		h.uploadNginx(0, "", "")
		d, _ := h.testUpload("http://"+serveAddr+"/upload", nil, "--duration", "4s")
		if d.Limit.Host == testdoc.HostClient || d.Limit.Host == testdoc.HostServer {
			t.Fatalf("limit %+v (verdict %s, %.1f Mbit/s); want neither host", d.Limit, d.Flow.Verdict.Verdict, d.SteadyBps/1e6)
		}
	})
	t.Run("refused and redirected", func(t *testing.T) {
		h := upPath(t, uploadLink, nil, nil, "nginx")
		h.uploadNginx(0, "", "")
		for path, want := range map[string]string{"/static": "404 Not Found: the server refused the body", "/moved": "301 Moved Permanently: the server redirects to"} {
			stdout, stderr, code := exe(t, h.bin, "test", "http://"+serveAddr+path, "--upload", "--size", "100kB", "--netns", h.path.Topo.Client().Netns)
			if code == 0 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("%s: exit %d, stderr %q (stdout %q); want one line with %q", path, code, stderr, stdout, want)
			}
		}
	})
}

// ipCert writes a self-signed certificate for ip (its own root: longhaul
// trusts it through SSL_CERT_FILE) and its key.
func ipCert(t *testing.T, ip string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644) != nil ||
		os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600) != nil {
		t.Fatal("writing the certificate")
	}
	return cert, key
}

// test URL --upload's flags: one direction, one body, and its own flags
// refused elsewhere, each one line with exit 2 before anything is sent
// (to a loopback port nothing serves, should one get through).
func TestTestURLUploadFlags(t *testing.T) {
	bin := binary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "http://127.0.0.1:9/upload", "--upload", "--download"}, "test URL runs one direction"},
		{[]string{"test", "http://127.0.0.1:9/big", "--size", "1MB"}, "--size is for test URL --upload"},
		{[]string{"test", "http://127.0.0.1:9/big", "--method", "PUT"}, "--method is for test URL --upload"},
		{[]string{"test", "http://127.0.0.1:9/upload", "--upload", "--size", "1MB", "--body", "/etc/hostname"}, "--size and --body both set"},
		{[]string{"test", "127.0.0.1:9", "--auth", "token", "--body", "/etc/hostname"}, "--body is for test URL --upload"},
		{[]string{"test", "http://127.0.0.1:9/upload", "--upload", "--auth", "token"}, "--auth is for a longhaul serve host"},
		{[]string{"test", "http://127.0.0.1:9/upload", "--upload", "--size", "0"}, "out of range"},
	} {
		_, stderr, code := exe(t, bin, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
