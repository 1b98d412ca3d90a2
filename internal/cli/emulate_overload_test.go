//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emu"
)

// lockedBuf is stderr shared by the watcher and the "command".
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWatchOverload: an emulator that overloads while the command runs
// gets its warning printed then, before the command's verdict at its
// end; one that never overloads gets none.
func TestWatchOverload(t *testing.T) {
	for _, overload := range []bool{true, false} {
		var polls atomic.Int32
		stats := func() emu.Stats {
			// overloaded from the second poll on
			return emu.Stats{Overloaded: overload && polls.Add(1) >= 2}
		}
		var w lockedBuf
		stop := watchOverload(stats, &w, 5*time.Millisecond)
		time.Sleep(100 * time.Millisecond) // the command runs
		w.Write([]byte("verdict: limited by the path\n"))
		stop()
		out := w.String()
		warn := strings.Index(out, "WARNING: the emulator is overloaded")
		verdict := strings.Index(out, "verdict:")
		if overload && (warn < 0 || warn > verdict) {
			t.Errorf("overloaded: the warning is not before the verdict:\n%s", out)
		}
		if !overload && warn >= 0 {
			t.Errorf("not overloaded, warned:\n%s", out)
		}
	}
}

// An overloaded run whose command succeeded exits 5, documented in the
// man pages' EXIT STATUS, with one line saying why.
func TestExitInvalid(t *testing.T) {
	cases := []struct {
		name       string
		code       int
		err        error
		overloaded bool
		want       int
		says       string
	}{
		{"overloaded, command succeeded", 0, nil, true, 5, "not valid"},
		{"overloaded, command failed", 3, nil, true, 3, ""},
		{"not overloaded", 0, nil, false, 0, ""},
		{"command failed", 7, nil, false, 7, ""},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := ExitCode(emulateOutcome(c.code, c.err, c.overloaded), &stderr)
		if code != c.want || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, stderr.String(), c.want, c.says)
		}
	}
}

// issue 51: the watcher warned "results of this run are not valid"
// while the run was short, its counters at the end spread the stall
// over the whole run below the allowance, and emulate exited 0. The
// warning stands: exit 5, overloaded in --stats-json too, and a line
// says why the table looks clean.
func TestWarnedRunStaysInvalid(t *testing.T) {
	var polls atomic.Int32
	stats := func() emu.Stats { return emu.Stats{Overloaded: polls.Add(1) == 2} } // forgiven from the third poll on
	var w lockedBuf
	stop := watchOverload(stats, &w, 5*time.Millisecond)
	for end := time.Now().Add(2 * time.Second); polls.Load() < 2 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if !stop() {
		t.Fatalf("the watcher warned and says it did not:\n%s", w.String())
	}
	path := filepath.Join(t.TempDir(), "stats.json")
	sf, err := openStatsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	var stderr bytes.Buffer
	end := emu.Stats{Elapsed: 60} // the end of the run: not overloaded by the counters
	code := ExitCode(finishEmulate(&stderr, sf, end, true, 0, nil), &stderr)
	if code != exitInvalid || !strings.Contains(stderr.String(), "the run stays not valid") || !strings.Contains(stderr.String(), "emulator was overloaded") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d saying the run stays not valid", code, stderr.String(), exitInvalid)
	}
	b, _ := os.ReadFile(path)
	var doc struct{ Overloaded bool }
	if err := json.Unmarshal(b, &doc); err != nil || !doc.Overloaded {
		t.Errorf("--stats-json: %s (%v); want overloaded", b, err)
	}
	// Not warned, not overloaded: exit 0, no warning.
	stderr.Reset()
	if code := ExitCode(finishEmulate(&stderr, statsFile{}, end, false, 0, nil), &stderr); code != 0 || strings.Contains(stderr.String(), "not valid") {
		t.Errorf("a clean run: exit %d, stderr:\n%s", code, stderr.String())
	}
}
