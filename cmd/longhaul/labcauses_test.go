//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
)

// The causes matrix's quick subset as CI runs it, over IPv6: a clean
// path and a 50 Mbit/s policer on 50 ms x 100 Mbit/s, each run judged by
// test, analyze (a capture at the server) and flows (the server's
// sockets), this binary as all three. Nothing may be named on the clean
// path; test names the policer at about its rate (its paced phases above
// what the download carried lose without a queue) and reports the path
// at that rate; analyze and flows give a verdict (their score is the
// matrix's: make bench-causes). A case whose verdict was wrong is run
// twice more on its own, and both must be right (rateCase).
func TestIntegrationLabCausesQuick(t *testing.T) {
	bin, prefix := emulateEnv(t, "tcpdump")
	hostCC(t)
	first := labCausesQuick(t, bin, prefix, "*-clean", "*-policer")
	for _, truth := range []string{scenario.Clean, "policer"} {
		t.Run(truth, func(t *testing.T) {
			rateCase(t, func(try int) string {
				if try == 1 {
					return first[truth]
				}
				return labCausesQuick(t, bin, prefix, "*-"+truth)[truth]
			})
		})
	}
}

// labCausesQuick runs the causes matrix's quick subset on the cases
// given (globs), checks what every run must hold, and returns how each
// truth's verdicts were wrong ("" right), by truth.
func labCausesQuick(t *testing.T, bin, prefix string, cases ...string) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	args := []string{"lab", "causes", "--quick", "--ipv6"}
	for _, c := range cases {
		args = append(args, "--case", c)
	}
	args = append(args, "--duration", "3s", "--retry-invalid", "2", "--prefix", prefix, "-o", dir)
	out, errOut, code := exe(t, bin, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := []string{"Named right, per case and tool", "Confusion matrix: flows"}
	if slices.Contains(cases, "*-policer") {
		want = append(want, "policer at half the rate")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	f := readResults(t, filepath.Join(dir, "results.jsonl"))
	runs := finalRuns(t, f)
	if f.Header.Scenario != "causes" || len(runs) != len(cases) {
		t.Fatalf("scenario %q, %d runs", f.Header.Scenario, len(runs))
	}
	wrong := map[string]string{}
	for _, r := range runs {
		checkCausesRun(t, bin, dir, r)
		switch r.Truth {
		case scenario.Clean:
			var bad []string
			for _, tool := range scenario.CauseTools() {
				if j := scenario.JudgeCause(tool, r.Truth, r.Named[tool]); j != scenario.Right {
					bad = append(bad, fmt.Sprintf("%s named %q", tool, r.Named[tool]))
				}
			}
			if len(bad) > 0 {
				wrong[r.Truth] = "clean path: " + strings.Join(bad, ", ")
			}
		case "policer":
			rate := r.Metrics["path_rate_bps"]
			if r.Named[scenario.ToolTest] != "policer" || rate < 35e6 || rate > 52e6 {
				wrong[r.Truth] = fmt.Sprintf("policer: test named %q, path rate %.4g bit/s; want the policer at about 50 Mbit/s", r.Named[scenario.ToolTest], rate)
			}
		default:
			t.Errorf("unexpected case %s (truth %q)", r.Case, r.Truth)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(page), "Confusion matrix: analyze") {
		t.Errorf("report.html (%v) lacks the confusion matrices", err)
	}
	return wrong
}

// checkCausesRun checks what every run of the matrix holds, whatever its
// verdicts: valid, over IPv6, a verdict from each tool with its document
// kept, and test's raw measurements judged again to the same document.
func checkCausesRun(t *testing.T, bin, dir string, r results.Run) {
	t.Helper()
	if !r.Valid || r.Path == nil || !r.Path.IPv6 || r.Capture == "" {
		t.Fatalf("%s: valid %v (%s), path %+v, capture %q", r.Case, r.Valid, r.Invalid, r.Path, r.Capture)
	}
	for _, tool := range scenario.CauseTools() {
		if got := r.Named[tool]; got == "" || got == "?" {
			t.Errorf("%s: %s gave no verdict (%q)", r.Case, tool, got)
		}
		// Each tool's document is kept beside the results.
		// (named as its capture: case-repeat, "-retryN" for a retry)
		if _, err := os.Stat(filepath.Join(dir, "docs", strings.TrimSuffix(filepath.Base(r.Capture), ".pcap")+"."+tool+".json")); err != nil {
			t.Errorf("%s: %v", r.Case, err)
		}
	}
	// And what test measured, which test --judge judges to the
	// run's test document again, byte for byte.
	base := filepath.Join(dir, "docs", strings.TrimSuffix(filepath.Base(r.Capture), ".pcap"))
	again, _, code := exe(t, bin, "test", "--judge", base+".test-raw.json", "--json")
	if want, err := os.ReadFile(base + ".test.json"); code != 0 || err != nil || again != string(want) {
		t.Errorf("%s: test --judge exit %d (%v), judged again:\n%s\nthe run's:\n%s", r.Case, code, err, again, want)
	}
	// The tools talked over IPv6: the capture holds the test's
	// connections between the ends' 2001:2:: addresses.
	doc, _, code := exe(t, bin, "analyze", "--json", filepath.Join(dir, r.Capture))
	if code != 0 || !strings.Contains(doc, `"[2001:2::2]:9978"`) {
		t.Errorf("%s: analyze exit %d; the capture lacks the server's IPv6 address and port", r.Case, code)
	}
}
