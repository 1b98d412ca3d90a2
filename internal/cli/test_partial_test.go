//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/judge/judgetest"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// downloadOnly is what a test measured before the server stopped
// answering: its download.
func downloadOnly() *judge.Raw {
	st := judgetest.Stream{Port: 40001, Rate: 80e6, RTT: 50 * time.Millisecond, Flight: 500_000, Ssthresh: 1 << 30}
	p := judge.PhaseRaw{Grant: wire.Grant{Phase: 1, Name: wire.PhaseDownload, Streams: 1, DurationS: 4},
		Done: wire.PhaseDone{Phase: 1, Reason: "duration"}, Server: st.Samples(4)}
	return &judge.Raw{Server: "198.18.0.2:9978", Started: time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC),
		Client: judgetest.Host("4096 131072 6291456", "4096 16384 4194304"), ServerSnap: judgetest.Host("4096 131072 6291456", "4096 16384 4194304"),
		Caps: testdoc.Caps{MaxDurationS: 120, MaxBytes: 1 << 34, MaxStreams: 16}, IdleRTTs: []time.Duration{50 * time.Millisecond},
		PhaseLength: 4 * time.Second, Phases: []judge.PhaseRaw{p}}
}

// issue 51: a server that stopped answering at the upload phase threw
// the download it had measured away. It is judged, printed and written
// (text, --json, -o), the missing phases named in the notes, and the
// exit status is 1 with one line naming the phase and why.
func TestTestKeepsPhasesMeasuredBeforeAStall(t *testing.T) {
	stall := &twohost.PartialError{Phase: "upload", Missing: []string{"upload", "capacity"},
		Err: errors.New("the server did not answer the upload phase's start within 30 s: it may be overloaded (CPU)")}
	for _, asJSON := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "run1")
		var stdout, stderr bytes.Buffer
		err := finishTest(testArgs{out: dir, json: asJSON}, downloadOnly(), stall, &stdout, &stderr)
		var line bytes.Buffer
		if code := ExitCode(err, &line); code != exitError {
			t.Errorf("json %v: exit %d; want %d", asJSON, code, exitError)
		}
		if got := line.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "test: upload phase: the server did not answer the upload phase's start within 30 s: it may be overloaded (CPU)") {
			t.Errorf("json %v: error line %q", asJSON, got)
		}
		b, rerr := os.ReadFile(filepath.Join(dir, "test.json"))
		if rerr != nil {
			t.Fatalf("json %v: -o wrote no test.json: %v", asJSON, rerr)
		}
		if _, rerr := os.Stat(filepath.Join(dir, "raw.json")); rerr != nil {
			t.Errorf("json %v: -o wrote no raw.json: %v", asJSON, rerr)
		}
		var doc testdoc.Doc
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Directions) != 1 || doc.Directions[0].Name != wire.PhaseDownload || doc.Directions[0].ThroughputBps == 0 {
			t.Errorf("json %v: directions %+v; want the download judged", asJSON, doc.Directions)
		}
		note := "not measured: the upload and capacity phases; the test ended at the upload phase"
		if !strings.Contains(strings.Join(doc.Notes, "\n"), note) {
			t.Errorf("json %v: notes %q lack %q", asJSON, doc.Notes, note)
		}
		out := stdout.String()
		if asJSON {
			var printed testdoc.Doc
			if err := json.Unmarshal(stdout.Bytes(), &printed); err != nil || len(printed.Directions) != 1 || len(printed.Notes) != len(doc.Notes) {
				t.Errorf("--json printed %d directions, notes %q (%v)", len(printed.Directions), printed.Notes, err)
			}
		} else if !strings.Contains(out, "download (server sends, client receives)") || !strings.Contains(out, note) || !strings.Contains(out, "wrote "+dir) {
			t.Errorf("text lacks the download, the note or the files written:\n%s", out)
		}
	}
}
