package flows

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// A socket stuck on a PMTU black hole: nothing acknowledged over the
// interval, the timer resending the head (4 times in a row by its end)
// while 620 bytes after it were SACKed (a lab run's control connection:
// its session answer's full-size segments never arrived, the tail did).
// Without the SACKed data (an outage, a peer gone) or with fewer
// timeouts in a row it is no black hole: idle, as before.
func TestJudgeStuckOnBlackHole(t *testing.T) {
	prev := sender()
	prev.CAState, prev.RTOs, prev.Inflight, prev.SackedBytes = caLoss, 2, 4*1448, 620
	cur := prev
	cur.RTOs = 4
	f := Judge(prev, cur, 4*time.Second, Options{})
	if f.Direction != DirSend || f.Verdict.Verdict != diagnose.LossLimited || f.Cause == nil || f.Cause.Name != diagnose.CausePMTUBlackHole ||
		f.Cause.Numbers["resends"] != 4 || f.Cause.Numbers["sacked_bytes"] != 620 || !strings.Contains(f.Summary, "nothing acknowledged in 4 s") ||
		!strings.HasPrefix(f.Fix, diagnose.ActorNetwork+": ") || !strings.Contains(f.Cause.Text, "up to 1448 bytes) 4 times in a row") {
		t.Fatalf("%+v\ncause %+v", f, f.Cause)
	}
	for name, mod := range map[string]func(*Sock){
		"no SACK (an outage)":   func(s *Sock) { s.SackedBytes = 0 },
		"2 timeouts in a row":   func(s *Sock) { s.RTOs = 2 },
		"not in the Loss state": func(s *Sock) { s.CAState = 3 },
	} {
		c := cur
		mod(&c)
		if f := Judge(prev, c, 4*time.Second, Options{}); f.Direction != DirIdle || f.Cause != nil {
			t.Errorf("%s: %s %v", name, f.Direction, f.Cause)
		}
	}
	// One that moved data is judged as any sender.
	moved := after(cur, 1<<20, time.Second, 0, 0)
	if f := Judge(prev, moved, 4*time.Second, Options{}); f.Cause != nil && f.Cause.Name == diagnose.CausePMTUBlackHole {
		t.Errorf("a socket that moved 1 MiB: %v", f.Cause.Name)
	}
}
