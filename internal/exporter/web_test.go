//go:build linux

package exporter

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"github.com/longhaul/longhaul/internal/connlimit"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRequireToken(t *testing.T) {
	const tok = "0123456789abcdef0123"
	h := requireToken(tok, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") }))
	tests := []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer 0123456789abcdef0124", http.StatusUnauthorized},
		{"token as basic", "Basic " + tok, http.StatusUnauthorized},
		{"prefix of the token", "Bearer 0123456789", http.StatusUnauthorized},
		{"the token", "Bearer " + tok, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/metrics", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d", w.Code, tc.want)
			}
		})
	}
}

// get makes one request from the local address src on a keep-alive
// client of its own and returns the client (its connection stays idle).
func get(t *testing.T, url, src string) (*http.Client, error) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1}, Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return c, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, nil
}

// One source's idle keep-alive connections cannot keep others out:
// beyond its share they are refused, and a full server closes its
// longest-idle connection to take a new one (16 idle keep-alives used to
// block every scrape for 60 s).
func TestGuardListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	g := newGuardListener(inner, connlimit.New(connlimit.Config{PerSource: 2, Start: 3, Full: 3}), 300*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }),
		ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: time.Minute, ConnState: g.connState}
	go srv.Serve(g)
	defer srv.Close()
	url := "http://" + inner.Addr().String() + "/"
	var held []*http.Client
	ok := 0
	for range 16 {
		c, err := get(t, url, "127.0.0.1")
		held = append(held, c)
		if err == nil {
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("%d of 16 keep-alive clients from one source served, want its share of 2", ok)
	}
	for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		if _, err := get(t, url, src); err != nil {
			t.Errorf("a scrape from %s behind one source's idle connections: %v", src, err)
		}
	}
	if n := g.lim.Open(); n > 3 {
		t.Errorf("%d connections open, Full is 3", n)
	}
	// A connection its client closes unused at once (an HTTP client's
	// spare dial) does not penalize its source.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.8")}}
	spare, err := d.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	spare.Close()
	time.Sleep(50 * time.Millisecond)
	if _, err := get(t, url, "127.0.0.8"); err != nil {
		t.Errorf("a source that closed an unused connection at once was refused: %v", err)
	}
	// A connection that never sends a request times out and penalizes
	// its source.
	d = net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}
	silent, err := d.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("a silent connection got data")
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := get(t, url, "127.0.0.9"); err == nil {
		t.Error("a source whose connection sent nothing was served at once (no penalty)")
	}
	for _, c := range held {
		c.CloseIdleConnections()
	}
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "longhaul test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	parsed, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// The whole server over HTTPS with a token: no token, no metrics.
func TestRunTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	const tok = "f00dfeedf00dfeedf00dfeed"
	tokFile := filepath.Join(dir, "token")
	os.WriteFile(tokFile, []byte(tok+"\n"), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: Config{MaxSeries: 2000}, Listen: "127.0.0.1:0", Interval: time.Second,
			Web: Web{TokenFile: tokFile, CertFile: cert, KeyFile: key},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(a net.Addr) { addr <- a }})
	}()
	var url string
	select {
	case a := <-addr:
		url = "https://" + a.String() + "/metrics"
	case err := <-done:
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	for _, auth := range []string{"", "Bearer " + tok} {
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		has := strings.Contains(string(body), "longhaul_build_info")
		if auth == "" && (resp.StatusCode != http.StatusUnauthorized || has) {
			t.Errorf("without the token: status %d, metrics served %v", resp.StatusCode, has)
		}
		if auth != "" && (resp.StatusCode != http.StatusOK || !has) {
			t.Errorf("with the token: status %d, metrics served %v", resp.StatusCode, has)
		}
	}
	if resp, err := http.Get(strings.Replace(url, "https", "http", 1)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served on the TLS port")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// Connections that never send a request, from many addresses, no longer
// fail the scrapes (issue 50: from 80 addresses they failed 7 scrapes of
// 10, such a connection never being the one closed): past the limiter's
// grace the oldest is closed for a scraper's new connection, in the
// flood's network (its share full) or in all (the server full). Each
// would otherwise be held for the header timeout (5 s).
func TestSilentFloodManySourcesScrapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func(i int) string
	}{
		// The scraper is 127.0.0.1: in the flood's /24 ...
		{"100 addresses of the scraper's /24", func(i int) string { return fmt.Sprintf("127.0.0.%d", 10+i) }},
		// ... or in a /24 of its own, the flood filling the server.
		{"100 addresses of as many /24s", func(i int) string { return fmt.Sprintf("127.0.%d.2", 1+i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			addr := make(chan net.Addr, 1)
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Options{Config: Config{MaxSeries: 2000}, Listen: "127.0.0.1:0", Interval: time.Second,
					Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(a net.Addr) { addr <- a }})
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			var srv string
			select {
			case a := <-addr:
				srv = a.String()
			case err := <-done:
				t.Fatal(err)
			}
			// 2 silent connections from each of 100 addresses.
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i := range 100 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.src(i))}, Timeout: 2 * time.Second}
				for range 2 {
					if c, err := d.Dial("tcp", srv); err == nil {
						conns = append(conns, c)
					}
				}
			}
			time.Sleep(1200 * time.Millisecond) // past connlimit.DefaultSilentGrace
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
			ok := 0
			for i := range 10 {
				resp, err := client.Get("http://" + srv + "/metrics")
				if err != nil {
					t.Logf("scrape %d: %v", i, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && strings.Contains(string(body), "longhaul_build_info") {
					ok++
				} else {
					t.Logf("scrape %d: status %d", i, resp.StatusCode)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if ok < 9 {
				t.Errorf("%d of 10 scrapes answered behind silent connections from 100 addresses, want 9 or more", ok)
			}
		})
	}
}
