package connlimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Refusal lines from many sources are capped in all (item 9: 250
// sources logged 252 lines), and what the cap left out is summed up.
func TestRefusedLogsCappedAcrossSources(t *testing.T) {
	l, c := newTest(Config{LogEvery: 10 * time.Second, LogBurst: 10})
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	src := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}) }
	for i := range 250 {
		l.Refused(log, src(i), "session refused")
	}
	if n := strings.Count(buf.String(), "\n"); n != 10 {
		t.Fatalf("%d lines for 250 sources' refusals, want 10 (the burst):\n%s", n, buf.String())
	}
	buf.Reset()
	c.t = c.t.Add(5 * time.Second)
	l.LogSummary(log)
	if buf.Len() != 0 {
		t.Fatalf("a summary before LogEvery passed: %s", buf.String())
	}
	c.t = c.t.Add(5 * time.Second)
	l.LogSummary(log)
	if !strings.Contains(buf.String(), "connection refusals not logged") || !strings.Contains(buf.String(), "refusals=240") {
		t.Fatalf("summary after 10 s: %q, want refusals=240", buf.String())
	}
	buf.Reset()
	l.LogSummary(log)
	if buf.Len() != 0 {
		t.Fatalf("a second summary of nothing: %s", buf.String())
	}
	// A minute of refusals from new sources, 100 a second: the burst,
	// LogBurst per LogEvery and a summary per LogEvery.
	for i := range 6000 {
		c.t = c.t.Add(10 * time.Millisecond)
		l.Refused(log, src(300+i), "handshake: EOF")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) > 10+60+6 {
		t.Errorf("%d lines for a minute of 6,000 refusals, want at most 76", len(lines))
	}
	sums, logged := 0, 0
	for _, ln := range lines {
		var n int
		if i := strings.Index(ln, "refusals="); i >= 0 {
			fmt.Sscanf(ln[i:], "refusals=%d", &n)
			sums += n
		} else {
			logged++
		}
	}
	// The last 10 s's left-out ones are not summed up yet.
	if logged+sums > 6000 || logged+sums < 6000-1000 {
		t.Errorf("%d lines and %d summed up of 6,000 refusals", logged, sums)
	}
	t.Logf("%d lines: %d refusals logged, %d summed up", len(lines), logged, sums)
}
