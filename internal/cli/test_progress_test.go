//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
)

// Off a terminal a 12 s phase prints a plain line every 5 s (it was
// silent); on one, a line rewritten every second and cleared at the end.
func TestPhaseTicker(t *testing.T) {
	var log bytes.Buffer
	tick := phaseTicker(&log, false)
	for s := 1; s <= 12; s++ {
		tick(twohost.Progress{Phase: "download", Elapsed: time.Duration(s) * time.Second, Total: 12 * time.Second, Bytes: int64(s) << 20, RateBps: 8e6})
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "download: 5 s of 12 s") || strings.ContainsAny(log.String(), "\r\033") {
		t.Errorf("off a terminal:\n%s", log.String())
	}
	var tty bytes.Buffer
	tick = phaseTicker(&tty, true)
	for s := 1; s <= 3; s++ {
		tick(twohost.Progress{Phase: "upload", Elapsed: time.Duration(s) * time.Second, Total: 3 * time.Second, RateBps: 1e6, Done: s == 3})
	}
	if strings.Count(tty.String(), "\r\033[K") != 3 || strings.Contains(tty.String(), "\n") || !strings.HasSuffix(tty.String(), "\r\033[K") {
		t.Errorf("on a terminal: %q", tty.String())
	}
}
