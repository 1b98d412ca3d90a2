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
