package pathmodel

import (
	"testing"
	"time"
)

func TestSenderSegment(t *testing.T) {
	for _, tc := range []struct {
		maxWindow float64
		mss, want int
	}{
		{1536, 1448, 768},    // a 4 KiB receiver's first window (measured)
		{2944, 1448, 1448},   // half of it is above one MSS
		{2895, 1448, 1447},   // just under two segments
		{536, 1448, 1448},    // at or below 536 the window is one segment
		{400, 1448, 1448},    // (tcp_bound_to_half_wnd does not halve)
		{1e6, 0, DefaultMSS}, // 0 means the default MSS
	} {
		if got := SenderSegment(tc.maxWindow, tc.mss); got != tc.want {
			t.Errorf("SenderSegment(%g, %d) = %d, want %d", tc.maxWindow, tc.mss, got, tc.want)
		}
	}
}

func TestWindowScale(t *testing.T) {
	for _, tc := range []struct {
		buf  int64
		want int
	}{
		{4096, 0}, {65535, 0}, {65536, 1}, {131072, 2}, {4194304, 7}, {6291456, 7}, {1 << 30, 14}, {MaxBuffer, 14},
	} {
		if got := WindowScale(tc.buf); got != tc.want {
			t.Errorf("WindowScale(%d) = %d, want %d", tc.buf, got, tc.want)
		}
	}
}

func TestFirstSpaceAndAlign(t *testing.T) {
	// A 4 KiB receiver (tcp_rmem 4096 4096 4096, rmem_max 4 MiB, so
	// wscale 7) starts from half its buffer, 2,048 bytes: one 1,460-byte
	// advertised segment; its handshake ACK offers 12 x 128 = 1,536 and
	// later ACKs 11 x 128 = 1,408 (both read from a capture).
	first := FirstSpace(2048, 1448)
	if first != 1460 {
		t.Fatalf("FirstSpace(2048) = %d, want 1460", first)
	}
	if up, down := AlignWindow(first, 7, true), AlignWindow(first, 7, false); up != 1536 || down != 1408 {
		t.Errorf("aligned 1460 at wscale 7 = %d up, %d down; want 1536, 1408", up, down)
	}
	if got := FirstSpace(1000, 1448); got != 1000 {
		t.Errorf("a space under one segment is kept: got %d", got)
	}
	if got := AlignWindow(2920, 0, true); got != 2920 {
		t.Errorf("an unscaled window is not rounded: got %d", got)
	}
}

// The receive windows the lab measured at 200 ms with nginx sending
// (lab buffers, receivers of 4 KiB and 16 KiB; tcp_info of the sender:
// snd_mss 768 and one segment in flight at 4 KiB; 7,240 bytes acked per
// round trip at 16 KiB).
func TestTinyReceiveBuffers(t *testing.T) {
	for _, tc := range []struct {
		buf  int64
		want float64
	}{
		{4096, 768},
		{16384, 5 * 1448},
		{65536, 28 * 1448},
	} {
		in := Input{RTT: 200 * time.Millisecond, RateBps: 1e9, Kernel: Version{6, 18},
			Rmem: Triple{4096, tc.buf, tc.buf}, Wmem: Triple{4096, 16384, 4194304}, CoreRmemMax: 4194304}
		r, err := Compute(in)
		if err != nil {
			t.Fatal(err)
		}
		if r.Receiver.WindowBytes != tc.want {
			t.Errorf("receiver tcp_rmem %d: window carries %g bytes per round trip, want %g", tc.buf, r.Receiver.WindowBytes, tc.want)
		}
	}
}
