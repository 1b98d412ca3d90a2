package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/golden"
)

const hosts = "../../testdata/hosts/"

// goldenCases run the CLI on fixtures; their stdout is compared with
// testdata/golden/NAME.golden (rewrite with go test -update).
var goldenCases = []struct {
	name string
	args []string
}{
	{"calc-200ms-1g", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s"}},
	{"calc-200ms-1g.json", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--json"}},
	{"calc-ubuntu-old", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--rmem", "4096 131072 6291456", "--wmem", "4096 16384 4194304", "--tcp-mem", "287901 383868 575802", "--ram", "24GiB", "--flows", "4"}},
	{"calc-ubuntu-old.json", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--rmem", "4096 131072 6291456", "--wmem", "4096 16384 4194304", "--json"}},
	{"calc-17kB-iw10", []string{"calc", "--rtt", "50ms", "--rate", "10Mbit/s", "--size", "17kB"}},
	{"calc-17kB-iw20", []string{"calc", "--rtt", "50ms", "--rate", "10Mbit/s", "--size", "17kB", "--initcwnd", "20", "--initrwnd", "20"}},
	{"calc-iperf-w-clamped", []string{"calc", "--rtt", "516ms", "--rate", "20Mbit/s", "--so-rcvbuf", "640K", "--core-rmem-max", "212992", "--kernel", "4.15"}},
	{"calc-upload-seed.json", []string{"calc", "--rtt", "35ms", "--rate", "100Mbit/s", "--size", "605kB", "--so-rcvbuf", "2212", "--json"}},
	{"audit-ubuntu-2004", []string{"audit", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s"}},
	{"audit-ubuntu-2004.json", []string{"audit", "--root", hosts + "ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s", "--json"}},
	{"audit-ubuntu-2004-nopath", []string{"audit", "--root", hosts + "ubuntu-2004"}},
	{"audit-debian-13", []string{"audit", "--root", hosts + "debian-13", "--rtt", "100ms", "--rate", "1Gbit/s", "--flows", "8"}},
	{"audit-debian-13.json", []string{"audit", "--root", hosts + "debian-13", "--rtt", "100ms", "--rate", "1Gbit/s", "--flows", "8", "--json"}},
	{"audit-broken", []string{"audit", "--root", hosts + "broken", "--rtt", "80ms", "--rate", "500Mbit/s"}},
	{"audit-broken.json", []string{"audit", "--root", hosts + "broken", "--rtt", "80ms", "--rate", "500Mbit/s", "--json"}},
}

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = Run(context.Background(), args, &o, &e)
	return o.String(), e.String(), err
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := run(t, tc.args...)
			if err != nil {
				t.Fatalf("longhaul %s: %v", strings.Join(tc.args, " "), err)
			}
			if strings.HasSuffix(tc.name, ".json") && !json.Valid([]byte(got)) {
				t.Fatalf("output is not valid JSON:\n%s", got)
			}
			golden.Check(t, filepath.Join("testdata", "golden", tc.name+".golden"), "longhaul "+strings.Join(tc.args, " "), []byte(got))
		})
	}
}

// TestJSONContracts checks the documented fields other tools rely on
// (docs/json.md).
func TestJSONContracts(t *testing.T) {
	out, _, err := run(t, "calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--rmem", "6MiB", "--wmem", "4MiB", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var calc struct {
		Schema   string `json:"schema"`
		BDP      *int64 `json:"bdp_bytes"`
		Receiver struct {
			Need    *int64   `json:"buffer_needed_bytes"`
			Ceiling *float64 `json:"ceiling_bps"`
		} `json:"receiver"`
		Sender struct {
			Need    *int64   `json:"buffer_needed_bytes"`
			Ceiling *float64 `json:"ceiling_bps"`
		} `json:"sender"`
	}
	if err := json.Unmarshal([]byte(out), &calc); err != nil {
		t.Fatal(err)
	}
	if calc.Schema != "longhaul.calc/v1" || calc.BDP == nil || *calc.BDP != 25_000_000 ||
		calc.Receiver.Need == nil || calc.Receiver.Ceiling == nil || calc.Sender.Need == nil || calc.Sender.Ceiling == nil {
		t.Errorf("calc --json misses documented fields:\n%s", out)
	}

	out, _, err = run(t, "audit", "--root", hosts+"broken", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string                       `json:"schema"`
		Findings []map[string]json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "longhaul.audit/v1" || len(doc.Findings) == 0 {
		t.Fatalf("audit --json: schema %q, %d findings", doc.Schema, len(doc.Findings))
	}
	for _, f := range doc.Findings {
		for _, k := range []string{"id", "severity", "observed", "expected", "why", "fix"} {
			if _, ok := f[k]; !ok {
				t.Errorf("finding %s lacks %q", f["id"], k)
			}
		}
		var sev string
		_ = json.Unmarshal(f["severity"], &sev)
		if sev != "info" && sev != "warn" && sev != "crit" {
			t.Errorf("finding %s: severity %q", f["id"], sev)
		}
	}
}

// TestSnapshotRoundTrip: audit --json written on one host and judged with
// --snapshot elsewhere gives the same findings.
func TestSnapshotRoundTrip(t *testing.T) {
	args := []string{"--rtt", "200ms", "--rate", "1Gbit/s"}
	direct, _, err := run(t, append([]string{"audit", "--root", hosts + "ubuntu-2004", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(file, []byte(direct), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _, err := run(t, append([]string{"audit", "--snapshot", file, "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(direct, again); diff != "" {
		t.Errorf("audit of a saved snapshot differs (-direct +snapshot):\n%s", diff)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string // substring of the one-line error
	}{
		{"rtt without unit", []string{"calc", "--rtt", "200", "--rate", "1Gbit/s"}, 2, "no unit"},
		{"ambiguous rate", []string{"calc", "--rtt", "200ms", "--rate", "1Gb"}, 2, "1Gbit/s"},
		{"negative rtt", []string{"calc", "--rtt", "-5ms", "--rate", "1Gbit/s"}, 2, "--rtt"},
		{"zero rate", []string{"calc", "--rtt", "200ms", "--rate", "0bit/s"}, 2, "greater than zero"},
		{"missing rate", []string{"calc", "--rtt", "200ms"}, 2, "--rtt and --rate go together"},
		{"no path", []string{"calc"}, 2, "calc needs the path"},
		{"zero flows", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--flows", "0"}, 2, "--flows"},
		{"unordered triple", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--rmem", "4096 8192 4096"}, 2, "min <= default <= max"},
		{"buffer over int", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--rmem", "4GiB"}, 2, "2147483647"},
		{"ratio out of range", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--ratio", "2"}, 2, "--ratio"},
		{"impossible rtt", []string{"calc", "--rtt", "2h", "--rate", "1Gbit/s"}, 2, "longer than any real path"},
		{"bad kernel", []string{"calc", "--rtt", "200ms", "--rate", "1Gbit/s", "--kernel", "six"}, 2, "--kernel"},
		{"unknown flag", []string{"calc", "--rt", "200ms"}, 2, "unknown flag"},
		{"stray argument", []string{"audit", "now"}, 2, "takes no arguments"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"bad fail-on", []string{"audit", "--root", hosts + "debian-13", "--fail-on", "info"}, 2, "--fail-on"},
		{"snapshot not json", []string{"audit", "--snapshot", "golden_test.go"}, 2, "not an audit --json document"},
		{"missing snapshot", []string{"audit", "--snapshot", "/nonexistent/snap.json"}, 1, "no such file"},
		{"fail-on crit finds crit", []string{"audit", "--root", hosts + "broken", "--fail-on", "crit"}, 3, "at or above crit"},
		{"flows interval too short", []string{"flows", "--interval", "1ms"}, 2, "100ms..1h"},
		{"flows bad dst", []string{"flows", "--dst", "example.com"}, 2, "neither an address nor a prefix"},
		{"flows port out of range", []string{"flows", "--port", "70000"}, 2, "--port"},
		{"flows count without watch", []string{"flows", "--count", "3"}, 2, "--count goes with --watch"},
		{"flows bad rate", []string{"flows", "--rate", "fast"}, 2, "--rate"},
		{"flows missing netns", []string{"flows", "--netns", "lh-no-such-ns"}, 1, "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, tc.args...)
			var stderr bytes.Buffer
			code := ExitCode(err, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (err %v)", code, tc.wantCode, err)
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("stderr %q does not mention %q", msg, tc.wantMsg)
			}
			if strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", msg)
			}
		})
	}
}

func TestHelpShowsExamples(t *testing.T) {
	for _, cmd := range []string{"calc", "audit"} {
		out, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "longhaul "+cmd+" --") {
			t.Errorf("%s --help has no examples:\n%s", cmd, out)
		}
	}
}
