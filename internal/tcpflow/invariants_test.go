package tcpflow

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// Every capture in the repository, analysed, states nothing its own
// numbers deny.
func TestInvariantsOnEveryCapture(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || path == filepath.Join(root, "testdata", "corpus", "cache")) {
			return fs.SkipDir
		}
		name := strings.TrimSuffix(e.Name(), ".gz")
		if e.IsDir() || !(strings.HasSuffix(name, ".pcap") || strings.HasSuffix(name, ".pcapng")) {
			return nil
		}
		n++
		an := analyzeFileForTest(t, path)
		for _, f := range an.Flows {
			if msgs := CheckInvariants(f); len(msgs) > 0 {
				t.Errorf("%s flow %d (%s): %s", path, f.ID, f.Verdict.Verdict, strings.Join(msgs, "; "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("found %d captures in the repository, want the truth captures at least", n)
	}
}

func analyzeFileForTest(t *testing.T, path string) *Analysis {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = bytes.NewReader(b)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	an, err := Analyze(r, Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return an
}

// The checks themselves: each contradiction is caught.
func TestCheckInvariants(t *testing.T) {
	ok := diagnose.Verdict{Verdict: diagnose.RwndLimited, Share: 0.8, ThroughputBps: 1e6, CeilingBps: 1.05e6, RwndBytes: 65535, InflightBytes: 65000,
		Shares: map[string]float64{"rwnd-limited": 0.8, "slow-start": 0.2}, Summary: "80% of the transfer the sender was pinned"}
	tests := []struct {
		name  string
		edit  func(v *diagnose.Verdict)
		scale string
		want  string
	}{
		{"consistent", func(v *diagnose.Verdict) {}, diagnose.ScaleKnown, ""},
		{"above the ceiling", func(v *diagnose.Verdict) { v.ThroughputBps = 2e6 }, diagnose.ScaleKnown, "above the ceiling"},
		{"more in flight than an unscaled window", func(v *diagnose.Verdict) { v.InflightBytes = 90000; v.RwndBytes = 0 }, diagnose.ScaleNotNegotiated, "above the window bound"},
		{"shares sum", func(v *diagnose.Verdict) { v.Shares["app-limited"] = 0.3 }, diagnose.ScaleKnown, "shares sum"},
		{"summary share", func(v *diagnose.Verdict) { v.Summary = "56% of the transfer" }, diagnose.ScaleKnown, "summary says 56%"},
		{"verdict share", func(v *diagnose.Verdict) { v.Share = 0.5; v.Summary = "50% of" }, diagnose.ScaleKnown, "its states' share"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := ok
			v.Shares = map[string]float64{"rwnd-limited": 0.8, "slow-start": 0.2}
			tc.edit(&v)
			f := &FlowReport{Directions: []DirReport{{Sender: "a", MSS: 1448, WindowScale: ScaleReport{State: tc.scale}, Verdict: v}}}
			got := strings.Join(CheckInvariants(f), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("CheckInvariants = %q, want %q", got, tc.want)
			}
		})
	}
}
