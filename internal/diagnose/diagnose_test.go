package diagnose

import (
	"strings"
	"testing"
	"time"
)

// tcpinfo builds samples the way a tcp_info poller would: every 10 ms,
// with cwnd and the chrono hints, delivering rate bytes per second.
func tcpinfo(n int, rate int64, mod func(i int, s *Sample)) []Sample {
	var out []Sample
	var sent int64
	for i := range n {
		sent += rate / 100
		s := Sample{T: time.Duration(i) * 10 * time.Millisecond, Sent: sent, Delivered: sent - 100_000, Inflight: 100_000,
			Rwnd: 4 << 20, Cwnd: 110_000, RTT: 50 * time.Millisecond}
		mod(i, &s)
		out = append(out, s)
	}
	return out
}

func TestClassify(t *testing.T) {
	tl := &Timeline{MSS: 1000, ssDone: true}
	tests := []struct {
		name string
		s    Sample
		want State
	}{
		{"zero window with data pending", Sample{Sent: 10, Rwnd: 0}, StateZeroWindow},
		{"flight a byte short of the window", Sample{Sent: 9000, Inflight: 8999, Rwnd: 9000}, StateRwnd},
		{"flight within an MSS of the window", Sample{Sent: 9000, Inflight: 8000, Rwnd: 9000}, StateRwnd},
		{"flight well below the window", Sample{Sent: 9000, Inflight: 5000, Rwnd: 9000}, StateNetwork},
		{"unknown window at its lower bound", Sample{Sent: 9000, Inflight: 8500, Rwnd: -1, RwndLowerBound: 9000}, StateWindowUnknown},
		{"recovery", Sample{Sent: 9000, Inflight: 5000, Rwnd: 90000, InRecovery: true}, StateLoss},
		{"nothing in flight", Sample{Sent: 9000, Delivered: 9000, Rwnd: 90000}, StateApp},
		{"tcp_info: cwnd not full", Sample{Sent: 9000, Inflight: 3000, Rwnd: 90000, Cwnd: 20000}, StateApp},
		{"tcp_info: sndbuf chrono", Sample{Sent: 9000, Inflight: 3000, Rwnd: 90000, Cwnd: 20000, SndbufLimited: true}, StateSndbuf},
		{"tcp_info: rwnd chrono", Sample{Sent: 9000, Inflight: 3000, Rwnd: 90000, RwndLimited: true}, StateRwnd},
	}
	for _, tc := range tests {
		if got := tl.Classify(tc.s); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The same verdict logic judges live tcp_info samples.
func TestDiagnoseTCPInfoSamples(t *testing.T) {
	info := Info{Sender: "10.0.0.1", Receiver: "10.0.0.2", RTT: 50 * time.Millisecond, Bytes: 50_000_000, Duration: 3 * time.Second, Scale: ScaleKnown, Segments: 35000}
	tests := []struct {
		name string
		mod  func(i int, s *Sample)
		want string
		fix  string
	}{
		{"receiver window", func(i int, s *Sample) { s.Rwnd, s.Inflight = 100_000, 100_000 }, RwndLimited, "tcp_rmem"},
		{"send buffer", func(i int, s *Sample) { s.SndbufLimited = true; s.Inflight = 50_000 }, SndbufLimited, "tcp_wmem"},
		{"application", func(i int, s *Sample) { s.Inflight = 5_000 }, AppLimited, "application"},
		{"zero window", func(i int, s *Sample) {
			if i > 20 {
				s.Rwnd = 0
			}
		}, ZeroWindow, "stops reading"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := info
			info.RwndGrew = true
			tl := FromSamples(tcpinfo(300, 16_000_000, tc.mod), 1448, 0)
			v := Diagnose(tl, info)
			if v.Verdict != tc.want || v.Share < 0.5 || !strings.Contains(v.Fix, tc.fix) {
				t.Errorf("verdict %s share %.2f fix %q; want %s, share > 0.5, fix mentioning %q", v.Verdict, v.Share, v.Fix, tc.want, tc.fix)
			}
		})
	}
}

func TestSeriesDownsampling(t *testing.T) {
	tl := &Timeline{MaxPoints: 64, MaxEvents: 10}
	for i := range 100_000 {
		tl.Add(Sample{T: time.Duration(i) * time.Millisecond, Sent: int64(i) * 1000, Delivered: int64(i) * 900, Inflight: int64(i % 1000), Rwnd: 1 << 20})
		tl.AddEvent(time.Duration(i), EvRetransFast, 0, 0)
	}
	if len(tl.Series) > 64 || len(tl.Series) < 32 || len(tl.Events) != 10 || tl.EventsDropped != 99_990 {
		t.Fatalf("%d points, %d events (%d dropped)", len(tl.Series), len(tl.Events), tl.EventsDropped)
	}
	last := tl.Series[len(tl.Series)-1]
	if last.Seq != 99_999_000 || last.Inflight != 999 {
		t.Errorf("last point %+v: want the latest seq and the largest flight of its bucket", last)
	}
	for i := 1; i < len(tl.Series); i++ {
		if tl.Series[i].T <= tl.Series[i-1].T {
			t.Fatalf("points out of order at %d", i)
		}
	}
}

func TestUnknownAndCaptureLimited(t *testing.T) {
	tl := &Timeline{}
	if v := Diagnose(tl, Info{}); v.Verdict != Unknown {
		t.Errorf("no data: %s", v.Verdict)
	}
	if v := Diagnose(tl, Info{CaptureLimited: "one direction only"}); v.Verdict != CaptureLimited || !strings.Contains(v.Summary, "one direction only") {
		t.Errorf("capture-limited: %+v", v)
	}
}

// A receiver whose application stops reading: Linux offers what is left
// of its last window (a few hundred bytes, rarely 0) and the sender
// waits; a flight pinned at a window far below the largest offered is
// the reader too. A window that was always small is a small buffer.
func TestClosedAndShrunkWindows(t *testing.T) {
	tests := []struct {
		name string
		peak int64
		s    Sample
		want State
	}{
		{"under one segment, after 80 kB", 80_000, Sample{Sent: 9000, Delivered: 9000, Rwnd: 310}, StateZeroWindow},
		{"under one segment, data in flight", 80_000, Sample{Sent: 9000, Delivered: 8000, Inflight: 1000, Rwnd: 310}, StateZeroWindow},
		{"pinned at 17 kB after 80 kB", 80_000, Sample{Sent: 30_000, Delivered: 12_624, Inflight: 17_376, Rwnd: 17_680}, StateZeroWindow},
		{"pinned at a window that was always 2.9 kB", 2896, Sample{Sent: 9000, Inflight: 2896, Rwnd: 2896}, StateRwnd},
		{"under one segment, always", 1000, Sample{Sent: 9000, Inflight: 1000, Rwnd: 1000}, StateRwnd},
		{"pinned at 64 kB after 80 kB", 80_000, Sample{Sent: 90_000, Inflight: 64_000, Rwnd: 65_000}, StateRwnd},
	}
	for _, tc := range tests {
		tl := &Timeline{MSS: 1448, ssDone: true, MaxRwnd: tc.peak}
		if got := tl.Classify(tc.s); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Losses while a queue stood (the RTT well above its minimum) are the
// bottleneck's queue overflowing under loss-based congestion control;
// the same losses at the minimum RTT are random loss.
func TestQueueLossesAreTheBottleneck(t *testing.T) {
	samples := tcpinfo(300, 16_000_000, func(i int, s *Sample) {
		s.Cwnd = 0 // a capture: no congestion window
		s.Retrans = int64(i/50 + 1)
		s.InRecovery = i%50 < 10
	})
	base := Info{RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond, HighRTT: 55 * time.Millisecond,
		Bytes: 48_000_000, Duration: 3 * time.Second, Scale: ScaleKnown, Segments: 33_000, Retrans: 330, RetransBytes: 480_000}
	random := base
	queue := base
	queue.RetransQueued, queue.HighRTT = 430_000, 120*time.Millisecond
	// 128 Mbit/s over a path of 140 Mbit/s (the user's --rate): the flow
	// filled it, so its losses were the queue's; over 1 Gbit/s they were
	// not.
	filled, below := base, base
	filled.RateBps, below.RateBps = 140e6, 1e9
	for _, tc := range []struct {
		name string
		in   Info
		want string
	}{{"random loss", random, LossLimited}, {"queue overflow", queue, Bottleneck},
		{"losses at the path's rate", filled, Bottleneck}, {"losses below the path's rate", below, LossLimited}} {
		v := Diagnose(FromSamples(samples, 1448, 0), tc.in)
		if v.Verdict != tc.want || v.Share < 0.9 {
			t.Errorf("%s: verdict %s share %.2f (shares %v), want %s over 0.9", tc.name, v.Verdict, v.Share, v.Shares, tc.want)
		}
	}
	// Loss recovery and congestion-window time count together against
	// a long slow start.
	tl := &Timeline{}
	tl.StateTime[StateSlowStart] = 35
	tl.StateTime[StateLoss] = 33
	tl.StateTime[StateNetwork] = 31
	if got := dominant(tl); got != StateLoss && got != StateNetwork {
		t.Errorf("dominant %v, want the congestion window (loss + network)", got)
	}
}

func TestRetransRateCountsBytes(t *testing.T) {
	// A capture at a TSO sender: 300 frames of up to 64 kB carried 3 MB;
	// 16 single-segment retransmissions are 0.77% of the data, not 5%
	// of the frames.
	in := Info{Bytes: 3_000_000, Segments: 300, Retrans: 16, RetransBytes: 16 * 1448}
	if got := retransRate(in); got < 0.0077 || got > 0.0078 {
		t.Errorf("retransRate %.4f, want 0.0077", got)
	}
	in.RetransBytes = 0 // tcp_info: segments of one MSS
	if got := retransRate(in); got != 16.0/300 {
		t.Errorf("retransRate by segments %.4f", got)
	}
}

func TestQueueStood(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		rtt, min time.Duration
		want     bool
	}{
		{150 * ms, 100 * ms, true},           // 1.5x and 50 ms more
		{149 * ms, 100 * ms, false},          // under 1.5x
		{3 * ms, 1 * ms, true},               // 3x and 2 ms more
		{2500 * time.Microsecond, ms, false}, // 2.5x but only 1.5 ms more
		{50 * ms, 0, false},                  // no minimum yet
	} {
		if got := QueueStood(tc.rtt, tc.min); got != tc.want {
			t.Errorf("QueueStood(%v, %v) = %v, want %v", tc.rtt, tc.min, got, tc.want)
		}
	}
}

// The loss fix advises BBR only to a sender not known to run it: a
// capture cannot tell (the advice is conditional), tcp_info can.
func TestLossFixKnowsTheCC(t *testing.T) {
	samples := tcpinfo(300, 16_000_000, func(i int, s *Sample) {
		s.Cwnd = 0
		s.Retrans = int64(i/50 + 1)
		s.InRecovery = i%50 < 10
	})
	in := Info{RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond, HighRTT: 55 * time.Millisecond,
		Bytes: 48_000_000, Duration: 3 * time.Second, Scale: ScaleKnown, Segments: 33_000, Retrans: 330, RetransBytes: 480_000}
	for _, tc := range []struct{ cc, has, hasNot string }{
		{"bbr", "already runs BBR", "consider BBR"},
		{"", "if it does not run BBR already", "already runs"},
		{"cubic", "consider BBR on the sender (net.ipv4.tcp_congestion_control=bbr with net.core.default_qdisc=fq) (it runs cubic)", "already runs"},
	} {
		in.CC = tc.cc
		v := Diagnose(FromSamples(samples, 1448, 0), in)
		if v.Verdict != LossLimited || !strings.Contains(v.Fix, tc.has) || strings.Contains(v.Fix, tc.hasNot) {
			t.Errorf("cc %q: verdict %s fix %q; want %q and not %q", tc.cc, v.Verdict, v.Fix, tc.has, tc.hasNot)
		}
	}
}

// A sender slowed by its CPU answered the first ACKs of its initial
// flight only after the whole flight was acknowledged (a capture under
// load, 60 KB at 50 ms): the round between the first and the last of
// those ACKs sent nothing and must not end slow start; the next flight
// doubled.
func TestSlowStartDrainOnlyRound(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	rw := int64(1 << 20)
	samples := []Sample{
		{T: ms(100.7), Sent: 5792, Inflight: 5792, Rwnd: rw},
		{T: ms(102.6), Sent: 14480, Inflight: 14480, Rwnd: rw},
		{T: ms(151.0), Sent: 14480, Delivered: 5792, Inflight: 8688, Rwnd: rw},
		{T: ms(152.8), Sent: 14480, Delivered: 14480, Rwnd: rw},
		{T: ms(155.9), Sent: 28960, Delivered: 14480, Inflight: 14480, Rwnd: rw},
		{T: ms(157.1), Sent: 43440, Delivered: 14480, Inflight: 28960, Rwnd: rw},
		{T: ms(206.3), Sent: 52128, Delivered: 14480, Inflight: 37648, Rwnd: rw},
		{T: ms(208.2), Sent: 52128, Delivered: 43440, Inflight: 8688, Rwnd: rw},
		{T: ms(210.6), Sent: 60000, Delivered: 43440, Inflight: 16560, Rwnd: rw},
		{T: ms(256.9), Sent: 60000, Delivered: 52128, Inflight: 7872, Rwnd: rw},
		{T: ms(260.8), Sent: 60000, Delivered: 60000, Rwnd: rw},
	}
	tl := FromSamples(samples, 1448, 0)
	ss, net := tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork]
	if ss <= 2*net {
		t.Errorf("slow start %v, network %v: the drain-only round ended slow start", ss, net)
	}
}

// A loaded server sent its 60 KB answer's first two segments 1.1 ms
// ahead of the other eight (a capture at the receiver, shifted to the
// sender's clock). The ACK of those two began a "round" that the ACK of
// the rest ended 1.3 ms later, its flight not grown: that ended slow
// start, and two thirds of the transfer were called the path's. A second
// round over within half a round trip is the initial window's tail: it
// and the next are one round.
func TestSlowStartSplitFlight(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	samples := []Sample{
		{T: ms(106.2), Sent: 2896, Inflight: 2896},
		{T: ms(107.3), Sent: 14480, Inflight: 14480},
		{T: ms(157.1), Sent: 14480, Delivered: 2896, Inflight: 11584},
		{T: ms(157.5), Sent: 20272, Delivered: 2896, Inflight: 17376},
		{T: ms(158.4), Sent: 20272, Delivered: 14480, Inflight: 5792},
		{T: ms(158.9), Sent: 43440, Delivered: 14480, Inflight: 28960},
		{T: ms(208.0), Sent: 43440, Delivered: 20272, Inflight: 23168},
		{T: ms(209.5), Sent: 60000, Delivered: 43440, Inflight: 16560},
		{T: ms(259.0), Sent: 60000, Delivered: 60000},
	}
	for i := range samples {
		samples[i].Rwnd, samples[i].RTT = 1<<20, 50*time.Millisecond
	}
	// (The third round is the split's echo: the ACK of the second
	// round's late tail comes 1.5 ms after the rest, and that round's
	// flight did not grow: the last round is the path's.)
	tl := FromSamples(samples, 1448, 0)
	if ss, net := tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork]; ss < 2*net {
		t.Errorf("slow start %v, network %v: the tail of a split flight counted as a round", ss, net)
	}
	// Without the round trip known, the rounds are as before.
	for i := range samples {
		samples[i].RTT = 0
	}
	if tl := FromSamples(samples, 1448, 0); tl.StateTime[StateNetwork] == 0 {
		t.Errorf("no RTT: network 0, want the flat round to end slow start")
	}
}
