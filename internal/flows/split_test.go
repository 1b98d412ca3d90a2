package flows

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// ccCase is two views, 1 s apart, of a sender on a 50 ms x 100 Mbit/s
// path, shaped as tcp_info showed each congestion control there
// (longhaul test's samples, 100 ms apart; MSS 1448).
type ccCase struct {
	name, cc, limit string
	prev, cur       Sock
	want            string
}

// view is a sending socket with cumulative counters.
func view(cc string, cwnd, ssthresh, wnd, inflight, notsent, sndbuf, queued int64, rtt time.Duration) Sock {
	return Sock{Local: local, Remote: remote, State: "ESTABLISHED", MSS: 1448, CC: cc,
		Cwnd: cwnd, Ssthresh: ssthresh, SndWnd: wnd, Inflight: inflight, NotSent: notsent,
		Sndbuf: sndbuf, WmemQueued: queued, RTT: rtt, MinRTT: 50 * time.Millisecond,
		BytesAcked: 50 << 20, BytesSent: 50 << 20, Busy: 20 * time.Second, WindowScale: true}
}

// next is v one second later: acked bytes, busy time and the chrono
// stats as the kernel counted them.
func next(v Sock, acked int64, rwnd, sndbuf time.Duration, inflight int64) Sock {
	v.BytesAcked += acked
	v.BytesSent += acked
	v.DataSegsOut += acked / 1448
	v.Busy += time.Second
	v.RwndLimited += rwnd
	v.SndbufLimited += sndbuf
	v.Inflight = inflight
	return v
}

const ms = time.Millisecond

func ccCases() []ccCase {
	var cs []ccCase
	// Receiver's tcp_rmem max 256 KiB: a 172 kB window, 24 Mbit/s.
	// bbr: pacing stops the sender before the window test, so the kernel
	// counts 30% rwnd-limited and its cwnd (2 BDP) never binds; the
	// flight sits a few segments under the window when sampled.
	p := view("bbr", 370_000, 180_000, 172_672, 144_800, 2_000_000, 4<<20, 2_200_000, 50200*time.Microsecond)
	cs = append(cs, ccCase{"bbr rwnd", "bbr", "rwnd", p, next(p, 3_010_000, 300*ms, 0, 147_696), diagnose.RwndLimited})
	// cubic and reno stop at the window: the kernel counts it.
	p = view("cubic", 375_000, 0, 154_496, 156_384, 800_000, 4<<20, 1_000_000, 51800*time.Microsecond)
	cs = append(cs, ccCase{"cubic rwnd", "cubic", "rwnd", p, next(p, 3_012_000, time.Second, 0, 157_832), diagnose.RwndLimited})
	p = view("reno", 300_000, 200_000, 154_496, 150_000, 800_000, 4<<20, 1_000_000, 51*ms)
	cs = append(cs, ccCase{"reno rwnd", "reno", "rwnd", p, next(p, 2_950_000, 950*ms, 0, 153_000), diagnose.RwndLimited})

	// Sender's tcp_wmem max 128 KiB: ~105-145 kB in flight, nothing
	// unsent, the buffer full. bbr: the kernel counts 65% sndbuf-limited,
	// the rest (still "slow start": ssthresh infinite) as cwnd; cubic and
	// reno: 0% sndbuf-limited, all of it cwnd.
	p = view("bbr", 369_240, 0, 800_000, 136_112, 0, 131_072, 156_672, 52700*time.Microsecond)
	cs = append(cs, ccCase{"bbr sndbuf", "bbr", "sndbuf", p, next(p, 2_340_000, 0, 650*ms, 120_184), diagnose.SndbufLimited})
	p = view("cubic", 322_904, 0, 1_235_968, 104_256, 0, 131_072, 108_288, 52800*time.Microsecond)
	cs = append(cs, ccCase{"cubic sndbuf", "cubic", "sndbuf", p, next(p, 1_900_000, 0, 0, 104_256), diagnose.SndbufLimited})
	p = view("reno", 150_000, 120_000, 1_235_968, 104_256, 0, 131_072, 90_240, 52*ms)
	cs = append(cs, ccCase{"reno sndbuf", "reno", "sndbuf", p, next(p, 1_900_000, 0, 0, 101_360), diagnose.SndbufLimited})

	// Big buffers: the path. bbr keeps the RTT near its minimum with
	// data waiting to be paced; cubic and reno fill the bottleneck's
	// queue (a BDP: the RTT doubles).
	p = view("bbr", 1_300_000, 620_000, 2_400_000, 700_000, 1_000_000, 8<<20, 2_000_000, 52*ms)
	cs = append(cs, ccCase{"bbr path", "bbr", "path", p, next(p, 11_700_000, 0, 0, 690_000), diagnose.Bottleneck})
	p = view("cubic", 1_200_000, 900_000, 3_000_000, 1_150_000, 600_000, 8<<20, 2_000_000, 95*ms)
	cs = append(cs, ccCase{"cubic path", "cubic", "path", p, next(p, 11_700_000, 0, 0, 1_180_000), diagnose.Bottleneck})
	p = view("reno", 1_100_000, 800_000, 3_000_000, 1_080_000, 600_000, 8<<20, 2_000_000, 90*ms)
	cs = append(cs, ccCase{"reno path", "reno", "path", p, next(p, 11_700_000, 0, 0, 1_090_000), diagnose.Bottleneck})
	return cs
}

// Every congestion control's shape of each limit gets the same verdict:
// the flight against the peer's window and the send buffer, with the RTT
// at its minimum and nothing lost, not the kernel's chrono stats alone
// (which call a bbr flow at the window, and a cubic or reno flow held by
// its send buffer, congestion-window-bound).
func TestJudgeEachCCShape(t *testing.T) {
	for _, c := range ccCases() {
		t.Run(c.name, func(t *testing.T) {
			f := Judge(c.prev, c.cur, time.Second, Options{RateBps: 100e6})
			if f.Verdict.Verdict != c.want {
				t.Errorf("verdict %s (%v), want %s\n%s", f.Verdict.Verdict, f.Shares, c.want, f.Summary)
			}
			sp := SplitInterval(c.prev, c.cur, time.Second)
			if sp.Rwnd+sp.Sndbuf+sp.Cwnd != sp.Busy || sp.Busy+sp.App != time.Second {
				t.Errorf("split %+v does not add up to 1 s", sp)
			}
		})
	}
}

// The evidence needs a calm path: a queue standing (the RTT well above
// its minimum) or losses leave the kernel's split as it was.
func TestSplitNeedsNoQueueNoLoss(t *testing.T) {
	c := ccCases()[0] // bbr at the window
	if sp := SplitInterval(c.prev, c.cur, time.Second); sp.Evidence != EvidenceWindow || sp.Rwnd != time.Second {
		t.Fatalf("calm bbr at the window: %+v", sp)
	}
	q := c.cur
	q.RTT = 80 * ms
	if sp := SplitInterval(c.prev, q, time.Second); sp.Evidence != "" || sp.Rwnd != 300*ms {
		t.Errorf("with a 30 ms queue the split moved: %+v", sp)
	}
	l := c.cur
	l.BytesRetrans += 30_000 // 1% of the interval's data
	if sp := SplitInterval(c.prev, l, time.Second); sp.Evidence != "" {
		t.Errorf("with 1%% lost the split moved: %+v", sp)
	}
	// An application that writes little: the buffer far from full, the
	// flow far from both windows and its cwnd: the application's time,
	// queue or not.
	a := c.prev
	a.Sndbuf, a.WmemQueued, a.NotSent, a.Inflight, a.SndWnd = 87_040, 4_000, 0, 4_000, 1<<20
	b := next(a, 200_000, 0, 0, 3_000)
	if sp := SplitInterval(a, b, time.Second); sp.Evidence != EvidenceApp || sp.App != time.Second {
		t.Errorf("a trickling writer: %+v; want its second the application's", sp)
	}
	b.RTT = 80 * ms
	if sp := SplitInterval(a, b, time.Second); sp.Evidence != EvidenceApp {
		t.Errorf("a trickling writer behind a queue: %+v; want the application's", sp)
	}
	if f := Judge(a, b, time.Second, Options{}); f.Verdict.Verdict != diagnose.AppLimited || !strings.Contains(f.Summary, "room to send") {
		t.Errorf("verdict %s: %s; want app-limited, waits with room to send", f.Verdict.Verdict, f.Summary)
	}
}

// BBR sets no ssthresh unless it loses: a clean path's bbr sender, busy
// for longer than its startup takes, is bound by the path, not in slow
// start (a 200 ms x 1 Gbit/s bench run read as slow start at 945
// Mbit/s); one that just started is still in its startup.
func TestBBRWithoutLossPastStartup(t *testing.T) {
	p := view("bbr", 1_300_000, 0, 2_400_000, 700_000, 1_000_000, 8<<20, 2_000_000, 52*ms)
	if f := Judge(p, next(p, 11_700_000, 0, 0, 690_000), time.Second, Options{RateBps: 100e6}); f.Verdict.Verdict != diagnose.Bottleneck {
		t.Errorf("bbr busy 21 s at 50 ms, no loss: %s (%s); want bottleneck", f.Verdict.Verdict, f.Summary)
	}
	p.Busy, p.BytesAcked, p.BytesSent = 0, 0, 0
	young := next(p, 1_500_000, 0, 0, 690_000)
	young.Busy = 300 * ms // 6 rounds
	if f := Judge(p, young, 300*ms, Options{RateBps: 100e6}); f.Verdict.Verdict != diagnose.SlowStart {
		t.Errorf("bbr busy 300 ms at 50 ms (6 rounds): %s (%s); want slow-start", f.Verdict.Verdict, f.Summary)
	}
}
