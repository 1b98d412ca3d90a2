package pathmodel

import "math/bits"

// minHalfWindow is the largest window at which a Linux sender stops
// halving: below it (TCP_MSS_DEFAULT, 536 bytes) the whole window is one
// segment (tcp_bound_to_half_wnd).
const minHalfWindow = 536

// timestampOptionLen is what the timestamp option takes from every
// segment: a receiver announces (and rounds its first window to) its
// advertised MSS, which is the model's MSS plus this.
const timestampOptionLen = 12

// SenderSegment is the payload of the segments a Linux sender cuts when
// the largest window its peer has offered is maxWindow bytes: never more
// than half of it once it exceeds 536 bytes (tcp_bound_to_half_wnd), so
// that a window of under two segments still carries something while the
// last one is acknowledged. Measured with a 4 KiB receive buffer: the
// first window is 1,536 bytes and nginx sends 768-byte segments, one per
// round trip (lab buffers client-4K, 30.7 kbit/s at 200 ms).
func SenderSegment(maxWindow float64, mss int) int {
	if mss <= 0 {
		mss = DefaultMSS
	}
	if maxWindow <= minHalfWindow {
		return mss
	}
	return max(min(mss, int(maxWindow)/2), 1)
}

// WindowScale is the shift a Linux receiver asks for in its SYN
// (tcp_select_initial_window): enough for the largest buffer it could
// grow to, the larger of tcp_rmem[2] and net.core.rmem_max, at most 14.
// A socket with SO_RCVBUF clamps its window to that buffer: pass it as
// maxBuf.
func WindowScale(maxBuf int64) int {
	if maxBuf <= MaxUnscaledWindow {
		return 0
	}
	return min(bits.Len64(uint64(maxBuf))-1-15, 14)
}

// FirstSpace is the receive space a Linux receiver settles on in the
// handshake: its initial space (InitialRwnd) rounded down to whole
// advertised segments (tcp_select_initial_window). Its windows are that
// space rounded to the window scale's granularity: up in the ACK that
// completes the handshake (the largest window the sender sees while the
// buffers are tiny), down afterwards (AlignWindow).
func FirstSpace(space int64, mss int) int64 {
	if mss <= 0 {
		mss = DefaultMSS
	}
	adv := int64(mss + timestampOptionLen)
	if space > adv {
		space -= space % adv
	}
	return space
}

// AlignWindow rounds a window to what a receiver with window scale
// wscale can advertise: up (the handshake's ACK) or down.
func AlignWindow(w int64, wscale int, up bool) int64 {
	g := int64(1) << wscale
	if up {
		w += g - 1
	}
	return w / g * g
}

// Goodput is the TCP payload rate a wire rate carries: 1448 bytes of
// payload per 1538 on an Ethernet wire (preamble, header, FCS and gap,
// IP and TCP headers with timestamps).
func Goodput(wireBps float64) float64 { return wireBps * 1448 / 1538 }
