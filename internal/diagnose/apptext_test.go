package diagnose

import (
	"strings"
	"testing"
	"time"
)

// A sender idle all interval, as tcp_info tells it (the idle total, no
// gaps), reads "idle", never "nothing to send ()" (issue 53).
func TestAppTextNoEmptyParens(t *testing.T) {
	var tl Timeline
	tl.StateTime[StateApp] = time.Second
	tl.IdleTime = time.Second
	v := Diagnose(&tl, Info{Sender: "this host", Receiver: "the peer", Bytes: 100, Duration: time.Second})
	if v.Verdict != AppLimited || strings.Contains(v.Summary, "()") || !strings.Contains(v.Summary, "1 s idle with nothing in flight") {
		t.Errorf("verdict %q, summary %q; want app-limited, the idle time, no empty parentheses", v.Verdict, v.Summary)
	}
}
