package pathmodel

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/badinput"
)

var (
	ubuntuOldRmem = Triple{4096, 131072, 6291456}
	ubuntuOldWmem = Triple{4096, 16384, 4194304}
)

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g within %.1f%%", what, got, want, tol*100)
	}
}

func TestBDP(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		rtt  time.Duration
		want int64
	}{
		{"seed 1: 200ms x 1Gbit/s", 1e9, 200 * time.Millisecond, 25_000_000},
		{"seed 3: 516ms x 20Mbit/s", 20e6, 516 * time.Millisecond, 1_290_000},
		{"lan: 0.1ms x 10Gbit/s", 10e9, 100 * time.Microsecond, 125_000},
		{"seed 2: 50ms x 10Mbit/s", 10e6, 50 * time.Millisecond, 62_500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(Input{RTT: tc.rtt, RateBps: tc.rate})
			if err != nil {
				t.Fatal(err)
			}
			if r.BDPBytes != tc.want {
				t.Errorf("BDPBytes = %d, want %d", r.BDPBytes, tc.want)
			}
		})
	}
}

func TestReceiveRatio(t *testing.T) {
	tests := []struct {
		name    string
		v       Version
		adv     int
		haveAdv bool
		want    float64
	}{
		{"6.18 scaling_ratio", Version{6, 18}, 0, false, 0.66},
		{"6.6 ignores adv_win_scale", Version{6, 6}, 2, true, 0.66},
		{"unknown kernel assumes current", Version{}, 0, false, 0.66},
		{"6.1 default adv_win_scale 1", Version{6, 1}, 1, true, 0.5},
		{"5.15 without the key reads default 1", Version{5, 15}, 0, false, 0.5},
		{"3.2 default was 2", Version{3, 2}, 0, false, 0.75},
		{"4.19 set to 2", Version{4, 19}, 2, true, 0.75},
		{"negative scale -2 is space>>2", Version{5, 4}, -2, true, 0.25},
		{"scale 0 is space>>0", Version{5, 4}, 0, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReceiveRatio(tc.v, tc.adv, tc.haveAdv)
			if got.Value != tc.want {
				t.Errorf("ratio = %v, want %v (%s)", got.Value, tc.want, got.Basis)
			}
			if got.Basis == "" {
				t.Error("ratio has no basis")
			}
		})
	}
}

func TestCeilings(t *testing.T) {
	tests := []struct {
		name          string
		in            Input
		wantBps       float64 // expected throughput, 2% tolerance
		wantLimitedBy string
		wantRcvNeed   int64
	}{
		{
			// The acceptance case: ~167 Mbit/s with the 6.x ratio.
			name:          "ubuntu-old buffers at 200ms, 6.x ratio",
			in:            Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: ubuntuOldRmem, Wmem: ubuntuOldWmem},
			wantBps:       math.Min(6291456*0.66, 4194304*0.72+SendOvershoot) * 8 / 0.2,
			wantLimitedBy: "sender",
			wantRcvNeed:   37_878_788,
		},
		{
			name:          "big buffers reach the path rate",
			in:            Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: Triple{4096, 131072, 64 << 20}, Wmem: Triple{4096, 16384, 64 << 20}},
			wantBps:       1e9,
			wantLimitedBy: "path",
			wantRcvNeed:   37_878_788,
		},
		{
			name:          "pre-6.6 kernel halves the window",
			in:            Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: ubuntuOldRmem, RecvRatio: ReceiveRatio(Version{5, 15}, 1, true)},
			wantBps:       6291456 * 0.5 * 8 / 0.2,
			wantLimitedBy: "receiver",
			wantRcvNeed:   50_000_000,
		},
		{
			name:          "four parallel flows multiply the window ceiling",
			in:            Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Flows: 4, Rmem: ubuntuOldRmem},
			wantBps:       4 * 6291456 * 0.66 * 8 / 0.2,
			wantLimitedBy: "receiver",
			wantRcvNeed:   9_469_697,
		},
		{
			// Seed 3: "-w 640K" clamped by an old rmem_max of 212992.
			name:          "SO_RCVBUF clamped by rmem_max",
			in:            Input{RTT: 516 * time.Millisecond, RateBps: 20e6, SoRcvbuf: 640 << 10, CoreRmemMax: 212992},
			wantBps:       float64((2*212992-RcvReserve)*66/100/1448*1448) * 8 / 0.516,
			wantLimitedBy: "receiver",
			wantRcvNeed:   1_954_546,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			within(t, "ExpectedBps", r.ExpectedBps, tc.wantBps, 0.001)
			if r.LimitedBy != tc.wantLimitedBy {
				t.Errorf("LimitedBy = %q, want %q", r.LimitedBy, tc.wantLimitedBy)
			}
			if r.Receiver.NeededBytes != tc.wantRcvNeed {
				t.Errorf("Receiver.NeededBytes = %d, want %d", r.Receiver.NeededBytes, tc.wantRcvNeed)
			}
		})
	}
}

// The acceptance criterion of the foundation issue, stated as written.
func TestUbuntuOldCeilingNear167Mbit(t *testing.T) {
	r, err := Compute(Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: ubuntuOldRmem, Wmem: ubuntuOldWmem})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "receiver ceiling", r.Receiver.CeilingBps, 167e6, 0.05)
	// The sender's tcp_wmem max of 4 MiB binds first: 0.72 x 4 MiB +
	// 32 KiB per 200 ms, 122.1 Mbit/s (measured by lab buffers: 116.3
	// Mbit/s, 3 repeats).
	within(t, "ceiling", r.ExpectedBps, 122.1e6, 0.005)
	if r.LimitedBy != "sender" {
		t.Errorf("LimitedBy = %q, want sender", r.LimitedBy)
	}
}

func TestSetSockBuf(t *testing.T) {
	tests := []struct {
		name    string
		req     int64
		coreMax int64
		receive bool
		want    SockBuf
	}{
		{"clamped and doubled", 655360, 212992, true, SockBuf{RequestedBytes: 655360, CoreMaxBytes: 212992, Clamped: true, BufferBytes: 425984}},
		{"below the clamp, doubled", 100000, 4194304, true, SockBuf{RequestedBytes: 100000, CoreMaxBytes: 4194304, BufferBytes: 200000}},
		{"tiny rcvbuf floors at SOCK_MIN_RCVBUF", 1000, 212992, true, SockBuf{RequestedBytes: 1000, CoreMaxBytes: 212992, BufferBytes: 2304}},
		{"tiny sndbuf floors at SOCK_MIN_SNDBUF", 1000, 212992, false, SockBuf{RequestedBytes: 1000, CoreMaxBytes: 212992, BufferBytes: 4608}},
		{"unknown core max does not clamp", 1 << 20, 0, true, SockBuf{RequestedBytes: 1 << 20, BufferBytes: 2 << 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SetSockBuf(tc.req, tc.coreMax, tc.receive, 0.5, time.Second)
			tc.want.WindowBytes = float64(tc.want.BufferBytes) * 0.5
			tc.want.CeilingBps = tc.want.WindowBytes * 8
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetSockBuf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransferRounds(t *testing.T) {
	tests := []struct {
		name           string
		in             Input
		wantRoundTrips int
		wantFirst      string
		wantSecs       [2]float64 // range
	}{
		{
			// Seed 2: 17 kB = 12 segments; IW10 needs a second flight.
			name:           "17kB at 50ms, initcwnd 10",
			in:             Input{RTT: 50 * time.Millisecond, RateBps: 10e6, TransferBytes: 17000},
			wantRoundTrips: 3, wantFirst: "initcwnd", wantSecs: [2]float64{0.150, 0.165},
		},
		{
			name:           "17kB at 50ms, initcwnd 20 initrwnd 20",
			in:             Input{RTT: 50 * time.Millisecond, RateBps: 10e6, TransferBytes: 17000, InitCwnd: 20, InitRwnd: 20},
			wantRoundTrips: 2, wantFirst: "initcwnd", wantSecs: [2]float64{0.100, 0.115},
		},
		{
			// An old kernel offers 10 segments unless initrwnd raises it:
			// initcwnd 20 alone does not help.
			name:           "17kB, pre-4.19 receiver, initcwnd 20 without initrwnd",
			in:             Input{RTT: 50 * time.Millisecond, RateBps: 10e6, TransferBytes: 17000, InitCwnd: 20, Kernel: Version{3, 10}, RecvRatio: AdvWinScaleRatio(1)},
			wantRoundTrips: 3, wantFirst: "initrwnd", wantSecs: [2]float64{0.150, 0.165},
		},
		{
			name:           "one segment takes handshake plus one round",
			in:             Input{RTT: 100 * time.Millisecond, RateBps: 1e9, TransferBytes: 100},
			wantRoundTrips: 2, wantFirst: "initcwnd", wantSecs: [2]float64{0.2, 0.2001},
		},
		{
			// Seed 4: a 2,920-byte window at 35 ms caps the upload at
			// 83 kB/s: 605 kB in ~7.3 s. nginx rcvbuf=2920 gives a
			// 5,840-byte buffer, 3,854 bytes of window space, rounded down
			// to two of the client's 1,460-byte segments (no scaling).
			name:           "605kB upload into a 2920-byte window",
			in:             Input{RTT: 35 * time.Millisecond, RateBps: 100e6, TransferBytes: 605000, SoRcvbuf: 2920, CoreRmemMax: 212992, MSS: 1460},
			wantRoundTrips: 209, wantFirst: "buffer", wantSecs: [2]float64{7.2, 7.45},
		},
		{
			name:           "large transfer fills the pipe and streams at the rate",
			in:             Input{RTT: 50 * time.Millisecond, RateBps: 100e6, TransferBytes: 100e6, Rmem: Triple{4096, 131072, 64 << 20}, Wmem: Triple{4096, 16384, 64 << 20}},
			wantRoundTrips: 8, wantFirst: "initcwnd", wantSecs: [2]float64{8.3, 8.4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compute(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tr := r.Transfer
			if tr == nil {
				t.Fatal("no transfer result")
			}
			if tr.RoundTrips != tc.wantRoundTrips {
				t.Errorf("RoundTrips = %d, want %d (flights %v)", tr.RoundTrips, tc.wantRoundTrips, tr.Flights)
			}
			if tr.FirstFlightLimit != tc.wantFirst {
				t.Errorf("FirstFlightLimit = %q, want %q", tr.FirstFlightLimit, tc.wantFirst)
			}
			if tr.Seconds < tc.wantSecs[0] || tr.Seconds > tc.wantSecs[1] {
				t.Errorf("Seconds = %.4f, want in %v", tr.Seconds, tc.wantSecs)
			}
			// The flights carry the transfer; once the pipe is full the
			// last round streams the rest (its flight is the window).
			var sum int64
			for _, f := range tr.Flights {
				sum += f
			}
			if n := len(tr.Flights); n > 0 && tr.StreamedBytes > 0 {
				sum += tr.StreamedBytes - tr.Flights[n-1]
				if tr.Flights[n-1] > tr.StreamedBytes {
					t.Errorf("last flight %d above what the round streams (%d)", tr.Flights[n-1], tr.StreamedBytes)
				}
			}
			if len(tr.Flights) < maxFlights && sum != tc.in.TransferBytes {
				t.Errorf("flights %v (then %d streamed) sum to %d, want %d", tr.Flights, tr.StreamedBytes, sum, tc.in.TransferBytes)
			}
		})
	}
}

// The acceptance criterion: with initcwnd 10 one extra round trip.
func TestInitcwnd10NeedsOneMoreRoundTrip(t *testing.T) {
	rt := func(iw, irw int) int {
		r, err := Compute(Input{RTT: 50 * time.Millisecond, RateBps: 1e9, TransferBytes: 17000, InitCwnd: iw, InitRwnd: irw})
		if err != nil {
			t.Fatal(err)
		}
		return r.Transfer.RoundTrips
	}
	if got10, got20 := rt(10, 0), rt(20, 20); got10 != got20+1 {
		t.Errorf("round trips: initcwnd 10 = %d, initcwnd 20 = %d; want exactly one more with 10", got10, got20)
	}
}

func TestInitialRwnd(t *testing.T) {
	tests := []struct {
		name     string
		k        Version
		rmemDef  int64
		initRwnd int
		ratio    float64
		want     int64
	}{
		{"6.18 default 128K buffer: 64K minus one", Version{6, 18}, 131072, 0, 0.66, 65535},
		{"6.18 initrwnd 20 lowers it", Version{6, 18}, 131072, 20, 0.66, 28960},
		{"6.18 initrwnd 100 cannot exceed 64K", Version{6, 18}, 131072, 100, 0.66, 65535},
		{"5.4 old 87380 default", Version{5, 4}, 87380, 0, 0.5, 43690},
		{"3.10 ten segments", Version{3, 10}, 87380, 0, 0.5, 14480},
		{"3.10 initrwnd 20 raises it", Version{3, 10}, 87380, 20, 0.5, 28960},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := InitialRwnd(tc.k, tc.rmemDef, 1448, tc.initRwnd, tc.ratio); got != tc.want {
				t.Errorf("InitialRwnd = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemory(t *testing.T) {
	// 10 flows at 200 ms x 1 Gbit/s: each needs 2.5 MB / 0.66.
	r, err := Compute(Input{
		RTT: 200 * time.Millisecond, RateBps: 1e9, Flows: 10,
		Rmem: Triple{4096, 131072, 64 << 20}, Wmem: Triple{4096, 16384, 64 << 20},
		TCPMemPages: [3]int64{1000, 2000, 4000}, RAMBytes: 1 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &Memory{
		Flows: 10, NeededBytes: 10 * 3787879, WorstCaseBytes: 10 * (64 << 20),
		TCPMemPressureBytes: 2000 * 4096, TCPMemMaxBytes: 4000 * 4096, RAMBytes: 1 << 30,
		FitsPressure: false, FitsMax: false, ShareOfRAM: float64(10*3787879) / (1 << 30),
	}
	if diff := cmp.Diff(want, r.Memory); diff != "" {
		t.Errorf("Memory (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	ok := Input{RTT: time.Second, RateBps: 1e6}
	tests := []struct {
		name   string
		mutate func(*Input)
	}{
		{"zero rtt", func(in *Input) { in.RTT = 0 }},
		{"negative rtt", func(in *Input) { in.RTT = -time.Millisecond }},
		{"absurd rtt", func(in *Input) { in.RTT = time.Hour }},
		{"zero rate", func(in *Input) { in.RateBps = 0 }},
		{"NaN rate", func(in *Input) { in.RateBps = math.NaN() }},
		{"negative flows", func(in *Input) { in.Flows = -1 }},
		{"negative size", func(in *Input) { in.TransferBytes = -1 }},
		{"unordered triple", func(in *Input) { in.Rmem = Triple{4096, 8192, 4096} }},
		{"triple over int", func(in *Input) { in.Wmem = Triple{4096, 16384, 1 << 31} }},
		{"zero in triple", func(in *Input) { in.Rmem = Triple{0, 1, 2} }},
		{"tiny mss", func(in *Input) { in.MSS = 10 }},
		{"huge initcwnd", func(in *Input) { in.InitCwnd = 5000 }},
		{"negative so_rcvbuf", func(in *Input) { in.SoRcvbuf = -5 }},
		{"unordered tcp_mem", func(in *Input) { in.TCPMemPages = [3]int64{3, 2, 1} }},
		{"ratio above 1", func(in *Input) { in.RecvRatio = Ratio{Value: 1.5} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := ok
			tc.mutate(&in)
			_, err := Compute(in)
			if !badinput.Is(err) {
				t.Errorf("Compute error = %v, want bad input", err)
			}
		})
	}
	if _, err := Compute(ok); err != nil {
		t.Errorf("valid input rejected: %v", err)
	}
}

func TestMSSWindow(t *testing.T) {
	for _, tc := range []struct {
		space float64
		mss   int
		want  float64
	}{
		{3854, 1448, 2896}, // this lab's upload: 2 x 1448
		{3854, 1460, 2920}, // the seed's capture: 2 x 1460
		{1000, 1448, 1000}, // less than a segment: as is
		{65535, 1448, 65160},
		{5000, 0, 5000},
	} {
		if got := MSSWindow(tc.space, tc.mss); got != tc.want {
			t.Errorf("MSSWindow(%g, %d) = %g, want %g", tc.space, tc.mss, got, tc.want)
		}
	}
	// The receiver's window carries whole segments and leaves out the
	// data not yet read: 64 KiB of buffer, 0.66 x 61,440 = 40,550 bytes,
	// 28 segments (this lab measured 40,544 in flight).
	r, err := Compute(Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: Triple{4096, 65536, 65536}, Wmem: Triple{4096, 16384, 64 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Receiver.WindowBytes != 28*1448 {
		t.Errorf("64 KiB tcp_rmem: window %g, want 28 x 1448", r.Receiver.WindowBytes)
	}
	// The upload seed's 5,840-byte buffer: under two segments with the
	// reserve, so the whole buffer counts (3,854 bytes -> 2 x 1,448).
	if got := MSSWindow(ReceiveSpace(5840, 0.66, 1448), 1448); got != 2896 {
		t.Errorf("5,840-byte buffer: window %g, want 2896", got)
	}
	// A sender never keeps less than two 64 KB super-packets in flight:
	// a 4 KiB tcp_wmem still carries 130,320 bytes per round trip.
	r, err = Compute(Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Rmem: Triple{4096, 131072, 64 << 20}, Wmem: Triple{4096, 4096, 4096}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sender.WindowBytes != 130320 || r.LimitedBy != "sender" {
		t.Errorf("4 KiB tcp_wmem: sender window %g limited by %s, want 130320 by the sender", r.Sender.WindowBytes, r.LimitedBy)
	}
}

// A path so slow that the first window fills it: the first flight is the
// initial window, not the whole transfer (it read "first flight 100 MB"
// and "1 data round(s): 1 TB"), and the rest is said to stream.
func TestTransferOnAFullPipeStreams(t *testing.T) {
	in := Input{RTT: 100 * time.Millisecond, RateBps: 1e6, Flows: 1, TransferBytes: 100e6}
	r, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	tr := *r.Transfer
	if len(tr.Flights) != 1 || tr.Flights[0] != 14480 || tr.StreamedBytes != 100e6 || tr.DataRounds != 1 {
		t.Errorf("flights %v, streamed %d, %d data rounds; want [14480], 100 MB, 1", tr.Flights, tr.StreamedBytes, tr.DataRounds)
	}
	if want := 0.2 + 800; tr.Seconds < want-1e-6 || tr.Seconds > want+1e-6 {
		t.Errorf("%.3f s, want 2 RTT + 800 s of serialization", tr.Seconds)
	}
}
