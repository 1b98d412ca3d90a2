package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortableCommands runs the commands that need no Linux (calc,
// audit --root, plan --snapshot, analyze, report) in a build with the
// command set of a non-Linux system (-tags longhaul_portable: the same
// files GOOS=darwin and GOOS=windows compile in internal/cli), and checks
// each prints exactly what the Linux build prints. The Linux-only
// commands must say so in one line and exit 2.
func TestPortableCommands(t *testing.T) {
	linux := binary(t)
	portable := filepath.Join(t.TempDir(), "longhaul-portable")
	build := exec.Command("go", "build", "-tags", "longhaul_portable", "-o", portable, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags longhaul_portable: %v\n%s", err, out)
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.json")
	out, errOut, code := exe(t, portable, "audit", "--root", "../../testdata/hosts/ubuntu-2004", "--json")
	if code != 0 || os.WriteFile(snap, []byte(out), 0o644) != nil {
		t.Fatalf("audit --root: exit %d: %s", code, errOut)
	}
	timeline := filepath.Join(dir, "upload.json")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the portable build's stdout
		save string // keep stdout in this file
	}{
		{"calc", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--json"}, `"bdp_bytes": 25000000`, ""},
		{"audit root", []string{"audit", "--root", "../../testdata/hosts/debian-13", "--rtt", "100ms", "--rate", "1Gbit/s"}, "Summary:", ""},
		{"plan snapshot", []string{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s"}, "net.ipv4.tcp_rmem", ""},
		{"analyze", []string{"analyze", "../../internal/tcpflow/testdata/truth/rwnd-limited.pcap.gz"}, "rwnd-limited", ""},
		{"analyze timeline", []string{"analyze", "--timeline", "../../internal/tcpflow/testdata/truth/zero-window.pcap.gz"}, `"schema": "longhaul.analyze/v1"`, timeline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errOut, code := exe(t, portable, tc.args...)
			if code != 0 || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, stdout lacks %q; stderr %s", code, tc.want, errOut)
			}
			want, _, _ := exe(t, linux, tc.args...)
			if got != want {
				t.Errorf("the portable build prints something else than the Linux build:\n%s\n---\n%s", got, want)
			}
			if tc.save != "" {
				if err := os.WriteFile(tc.save, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Run("report", func(t *testing.T) {
		html := filepath.Join(dir, "report.html")
		_, errOut, code := exe(t, portable, "report", timeline, "-o", html)
		b, err := os.ReadFile(html)
		if code != 0 || err != nil || !strings.Contains(string(b), "uPlot") {
			t.Fatalf("report: exit %d, %v: %s", code, err, errOut)
		}
	})
	for _, cmd := range []string{"emulate", "lab", "verify", "flows", "serve", "test"} {
		t.Run(cmd+" says Linux", func(t *testing.T) {
			out, errOut, code := exe(t, portable, cmd, "--rtt", "200ms")
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "needs Linux") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}
