package diagnose

import (
	"strings"
	"testing"
	"time"
)

// TestJudgeReceiver: what a download's receiver tells from its own
// socket (its window, the transfer's length, the path's known rate), and
// what it leaves to the sender's report: losses that hold the sender,
// which out-of-order arrivals alone cannot tell from reordering.
func TestJudgeReceiver(t *testing.T) {
	open := ReceiverView{Bytes: 100e6, Bps: 40e6, RTT: 50 * time.Millisecond, Rounds: 400, InFlight: 250e3, MaxWindow: 4 << 20, Ceiling: 6 << 20}
	full := open
	full.InFlight, full.MaxWindow, full.Ceiling = 3.9e6, 4<<20, 4500<<10
	lossy := open
	lossy.OutOfOrder = 2000 // 2.9% of the segments
	for _, tc := range []struct {
		name    string
		r       ReceiverView
		held    string
		verdict string
		inText  string
	}{
		{"short", ReceiverView{Bytes: 17e3, Bps: 1e6, RTT: 50 * time.Millisecond, Rounds: 4, MaxWindow: 65535}, HeldByLength, SlowStart, "slow start"},
		{"window full at the setting", full, HeldByRcvbuf, RwndLimited, "filled the window"},
		{"at the path's rate", func() ReceiverView { r := full; r.PathBps = 41e6; return r }(), HeldAtRate, Bottleneck, "path's rate"},
		{"open", open, HeldBySenderOrPath, Unknown, "the sender or the path"},
		{"out of order", lossy, HeldByOutOfOrder, Unknown, "loss or reordering: which is not told from the receiver"},
		{"the sender's losses", func() ReceiverView {
			r := lossy
			r.Sender = &SenderReport{Retrans: 2000, Bytes: 100e6, Cwnd: -1, Known: "it retransmitted 2000 segments"}
			return r
		}(), HeldByPathLoss, LossLimited, "the server's losses (2000"},
		{"the sender's small cwnd", func() ReceiverView {
			r := open
			r.Sender = &SenderReport{Retrans: 0, Bytes: 100e6, Cwnd: 100e3}
			return r
		}(), HeldBySender, Unknown, "held at the server"},
	} {
		j := JudgeReceiver(tc.r)
		if j.Held != tc.held || j.Verdict.Verdict != tc.verdict || !strings.Contains(j.Verdict.Summary, tc.inText) {
			t.Errorf("%s: %s %s %q", tc.name, j.Held, j.Verdict.Verdict, j.Verdict.Summary)
		}
	}
}
