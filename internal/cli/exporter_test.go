//go:build linux

package cli

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/exporter"
)

func TestExporterBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("probe-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string
	}{
		{"interval too short", []string{"exporter", "--interval", "10ms"}, 2, "out of range: 100 ms..60 s"},
		{"interval not a duration", []string{"exporter", "--interval", "soon"}, 2, "--interval"},
		{"listen without port", []string{"exporter", "--listen", "localhost"}, 2, "HOST:PORT"},
		{"group without cidr", []string{"exporter", "--peer-group", "eu"}, 2, "NAME=CIDR"},
		{"group named other", []string{"exporter", "--peer-group", "other=10.0.0.0/8"}, 2, "NAME=CIDR"},
		{"group bad cidr", []string{"exporter", "--peer-group", "eu=10.0.0.0/33"}, 2, "neither an address nor a prefix"},
		{"group twice", []string{"exporter", "--peer-group", "eu=10.0.0.0/8", "--peer-group", "eu=10.1.0.0/16"}, 2, "given twice"},
		{"bad port", []string{"exporter", "--ports", "443,http"}, 2, "--ports"},
		{"path without rate", []string{"exporter", "--peer-group", "sin=10.0.0.0/8", "--peer-path", "sin=170ms"}, 2, "NAME=RTT/RATE"},
		{"path of no group", []string{"exporter", "--peer-path", "sin=170ms/1Gbit/s"}, 2, "not a --peer-group"},
		{"path rtt zero", []string{"exporter", "--peer-group", "sin=10.0.0.0/8", "--peer-path", "sin=0s/1Gbit/s"}, 2, "RTT must be"},
		{"path rate too low", []string{"exporter", "--peer-group", "sin=10.0.0.0/8", "--peer-path", "sin=170ms/1kbit/s"}, 2, "rate must be"},
		{"path twice", []string{"exporter", "--peer-group", "sin=10.0.0.0/8", "--peer-path", "sin=170ms/1Gbit/s", "--peer-path", "sin=150ms/1Gbit/s"}, 2, "given twice"},
		{"max series too small", []string{"exporter", "--max-series", "50"}, 2, "give 113..10000000"},
		{"stray argument", []string{"exporter", "now"}, 2, "takes no arguments"},
		{"probe rounds zero", []string{"exporter", "--probe-allow", "198.18.0.0/24", "--probe-auth", tok, "--probe-rounds", "0"}, 2, "--probe-rounds must be 1..1000"},
		{"probe phase too short", []string{"exporter", "--probe-allow", "198.18.0.0/24", "--probe-auth", tok, "--probe-phase", "1s"}, 2, "--probe-phase"},
		{"cert without key", []string{"exporter", "--tls-cert-file", "cert.pem"}, 2, "go together"},
		{"missing token file", []string{"exporter", "--listen", "127.0.0.1:0", "--auth-token-file", "/nonexistent/token"}, 1, "no such file"},
		{"missing netns", []string{"exporter", "--netns", "lh-no-such-ns", "--listen", "127.0.0.1:0"}, 1, "does not exist"},
		{"port in use", []string{"exporter", "--listen", busy.Addr().String()}, 1, "address already in use"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, tc.args...)
			var stderr bytes.Buffer
			code := ExitCode(err, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (err %v)", code, tc.wantCode, err)
			}
			if msg := stderr.String(); !strings.Contains(msg, tc.wantMsg) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q: want one line mentioning %q", msg, tc.wantMsg)
			}
		})
	}
}

func TestExporterArgs(t *testing.T) {
	a := exporterArgs{listen: ":9979", maxSeries: 500, perFlow: true,
		groups: []string{"eu=203.0.113.0/24", "host=2001:db8::7", "wide=198.18.3.4/15"}, paths: []string{"eu=170ms/1Gbit/s"}}
	if err := errors.Join(a.interval.Set("2s"), a.ports.Set("443, 5201")); err != nil {
		t.Fatal(err)
	}
	got, err := a.parse()
	if err != nil {
		t.Fatal(err)
	}
	want := exporter.Options{Listen: ":9979", Interval: 2 * time.Second, Version: version, Config: exporter.Config{
		Groups: []exporter.Group{
			{Name: "eu", Prefix: netip.MustParsePrefix("203.0.113.0/24")},
			{Name: "host", Prefix: netip.MustParsePrefix("2001:db8::7/128")},
			{Name: "wide", Prefix: netip.MustParsePrefix("198.18.0.0/15")},
		},
		Ports: []uint16{443, 5201}, MaxSeries: 500, PerFlow: true},
		Paths: []exporter.PeerPath{{Group: "eu", RTT: 170 * time.Millisecond, RateBps: 1e9}}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
