//go:build linux

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/secret"
)

// probeGet scrapes /probe?query with Prometheus's scrape-timeout header
// and returns the status, the body's samples by series and how long it
// took.
func probeGet(t *testing.T, exp, query string, scrapeTimeout float64) (int, map[string]float64, string, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+exp+"/probe?"+query, nil)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(scrapeTimeout, 'f', -1, 64))
	start := time.Now()
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("/probe?%s: %v", query, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, samples(string(b)), string(b), time.Since(start)
}

var sampleLine = regexp.MustCompile(`(?m)^([a-z_]+(?:\{[^}]*\})?) (\S+)$`)

// samples parses Prometheus's text format: value by series.
func samples(text string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range sampleLine.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			out[m[1]] = v
		}
	}
	return out
}

// tlsFiles writes a self-signed certificate and key for serve and
// returns their paths and the key's pin.
func tlsFiles(t *testing.T, dir string) (cert, key, pin string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "longhaul test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600) != nil ||
		os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600) != nil {
		t.Fatal("writing the certificate")
	}
	c, _ := x509.ParseCertificate(der)
	return cert, key, secret.SPKIPin(c)
}

// listenIn listens on addr inside namespace ns and runs serve on each
// connection until the test ends.
func listenIn(t *testing.T, ns, addr string, serve func(net.Conn)) {
	t.Helper()
	var ln net.Listener
	if err := netns.Do(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}

// TestIntegrationExporterProbe runs the exporter's /probe against the
// real serve and against targets that reset, stall and blackhole, all
// inside a throwaway namespace: the caps hold whatever the query says,
// the query cannot leave the allowed targets, a failing target ends at
// the probe's deadline with a failed-probe metric, and the exporter's
// goroutines and memory stay flat over 1,000 probes.
func TestIntegrationExporterProbe(t *testing.T) {
	ns := nstest.New(t)
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		// A TUN device nobody reads drops what is routed to it: SYNs to
		// 198.18.98.0/24 go unanswered, as to a host that blackholes.
		{"tuntap", "add", "bh0", "mode", "tun"},
		{"addr", "add", "198.18.98.1/24", "dev", "bh0"},
		{"link", "set", "bh0", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	bin := binary(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("probe-test-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	// serve with TLS: the targets file gives its pin.
	cert, key, pin := tlsFiles(t, dir)
	targets := filepath.Join(dir, "targets")
	if err := os.WriteFile(targets, []byte("127.0.0.1:9978 "+pin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var slog lockedBuf
	srv := exec.Command(bin, "serve", "--netns", ns, "--auth", token, "--listen", "127.0.0.1:9978", "--tls-cert", cert, "--tls-key", key)
	srv.Stderr = &slog
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
	// 127.0.0.1:7001 resets every connection; 7002..7011 accept and
	// say nothing.
	listenIn(t, ns, "127.0.0.1:7001", func(c net.Conn) {
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	for i := range 10 {
		listenIn(t, ns, fmt.Sprintf("127.0.0.1:%d", 7002+i), func(c net.Conn) {
			time.Sleep(30 * time.Second)
			c.Close()
		})
	}

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%.4000s", slog.String())
		}
	})
	exp := freePort(t)
	startExporter(t, bin, exp, "--netns", ns, "--probe-allow", "127.0.0.0/8", "--probe-allow", "198.18.98.0/24",
		"--probe-targets", targets, "--probe-auth", token,
		// The test's serves and its reset, stalled and blackholed
		// targets listen on these ports: only serve ports are probed.
		"--probe-ports", "9978,7001-7011,7999",
		"--probe-min-interval", "0s", "--probe-max-rate", "20Mbit/s", "--probe-concurrency", "16", "--probe-timeout", "15s")

	// A real probe, over TLS with the pinned key: both directions
	// measured, within the rate cap.
	code, m, body, took := probeGet(t, exp, "target=127.0.0.1", 15)
	if code != 200 || m["longhaul_probe_success"] != 1 {
		t.Fatalf("probe of serve: %d after %s\n%s", code, took, body)
	}
	for _, dir := range []string{"download", "upload"} {
		r := m[`longhaul_probe_throughput_bits_per_second{direction="`+dir+`"}`]
		if r < 5e6 || r > 20e6*1.1 {
			t.Errorf("%s at %.1f Mbit/s: want the probe's 20 Mbit/s cap, not more (a loopback runs at Gbit/s)", dir, r/1e6)
		}
	}
	if !strings.Contains(body, "longhaul_probe_limit_info{") || m[`longhaul_probe_rtt_seconds{state="idle"}`] <= 0 {
		t.Errorf("probe result lacks the limit or the RTT:\n%s", body)
	}
	t.Logf("a probe of serve: %s, %s", took.Round(time.Millisecond), strings.Join(regexp.MustCompile(`longhaul_probe_limit_info\{[^}]*\}`).FindAllString(body, -1), " "))

	// Steering: outside the prefixes, or with a parameter the caps
	// would have to obey, the exporter refuses before any work.
	for _, q := range []string{"target=198.51.100.1", "target=10.0.0.1:9978", "target=127.0.0.1&rate=1e15", "target=127.0.0.1&duration=3600",
		"target=198.18.99.1", "target=[::1]", "target=127.0.0.1:9978/x"} {
		if code, _, body, _ := probeGet(t, exp, q, 10); code != 400 && code != 403 {
			t.Errorf("/probe?%s answered %d:\n%.300s", q, code, body)
		}
	}

	// Failing targets end by the scrape's deadline, with the reason.
	for _, tc := range []struct {
		target, reason string
		within         time.Duration
	}{
		{"127.0.0.1:7001", "reset", time.Second},       // reset
		{"127.0.0.1:7002", "timeout", 2 * time.Second}, // stall: 2 s scrape timeout, 1.5 s probe
		{"198.18.98.2", "timeout", 2 * time.Second},    // blackhole
		{"127.0.0.1:7999", "unreachable", time.Second}, // nothing listens: refused
	} {
		code, m, body, took := probeGet(t, exp, "target="+tc.target, 2)
		if code != 200 || m["longhaul_probe_success"] != 0 || took > tc.within ||
			(tc.reason != "" && m[`longhaul_probe_failure_info{reason="`+tc.reason+`"}`] != 1) {
			t.Errorf("%s: %d after %s, want a failed probe (%s) within %s:\n%s", tc.target, code, took, tc.reason, tc.within, body)
		}
	}

	// Flat over 1,000 probes: 940 resets, 50 stalls, 10 blackholes.
	self := func() (float64, float64, float64) {
		resp, err := http.Get("http://" + exp + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := samples(string(b))
		return s["go_goroutines"], s["process_resident_memory_bytes"], s["longhaul_exporter_probes_total"] +
			s["longhaul_exporter_probe_results_reused_total"] + s["longhaul_exporter_probes_refused_total"]
	}
	time.Sleep(2 * time.Second) // the stalled probes above end
	// One round is 10 stalls beside 188 resets, and, when blackholes
	// is set, 10 blackholes too.
	var wg sync.WaitGroup
	round := func(blackholes bool, first int) int {
		for i := range 10 {
			wg.Go(func() { probeGet(t, exp, fmt.Sprintf("target=127.0.0.1:%d", 7002+i), 1.5) })
		}
		n := 188 + 10
		if blackholes {
			for i := range 10 {
				wg.Go(func() { probeGet(t, exp, fmt.Sprintf("target=198.18.98.%d", first+i), 1.5) })
			}
			n += 10
		}
		for range 188 {
			probeGet(t, exp, "target=127.0.0.1:7001", 2)
		}
		wg.Wait()
		return n
	}
	// Warm-up with the same mix: the heap grows to the working size of
	// this load (the stalls and blackholes run beside the resets), so
	// what grows after it is a leak.
	round(true, 30)
	for range 100 {
		probeGet(t, exp, "target=127.0.0.1:7001", 2)
	}
	time.Sleep(2 * time.Second)
	g0, rss0, runs0 := self()
	n := 0
	for r := range 5 {
		n += round(r == 0, 10)
	}
	time.Sleep(2 * time.Second)
	g1, rss1, runs1 := self()
	t.Logf("%d probes: goroutines %.0f -> %.0f, RSS %.1f -> %.1f MB", n, g0, g1, rss0/1e6, rss1/1e6)
	if runs1-runs0 != float64(n) {
		t.Errorf("%d probe requests, %.0f counted run, reused or refused", n, runs1-runs0)
	}
	if g1 > g0+5 || rss1 > rss0+4e6 {
		t.Errorf("over %d probes goroutines went %.0f -> %.0f and RSS %.1f -> %.1f MB: want flat", n, g0, g1, rss0/1e6, rss1/1e6)
	}
}
