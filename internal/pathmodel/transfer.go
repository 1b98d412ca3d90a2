package pathmodel

import (
	"math"
)

// Transfer is the model's timeline of one short transfer on a new
// connection: SYN, SYN-ACK, then the request and slow-start flights.
type Transfer struct {
	Bytes    int64 `json:"bytes"`
	Segments int64 `json:"segments"`
	MSS      int   `json:"mss"`
	InitCwnd int   `json:"initcwnd"`
	// InitRwndBytes is the receiver's window in its SYN-ACK/first ACK.
	InitRwndBytes int64 `json:"initrwnd_bytes"`
	// FirstFlightLimit names what bounds the first flight: initcwnd,
	// initrwnd or buffer.
	FirstFlightLimit string `json:"first_flight_limit"`
	// Flights lists the bytes sent in each data round. Once a window
	// fills the pipe the rest streams at the path's rate in the last
	// round: that round's flight is the window, and StreamedBytes all
	// that the round carries.
	Flights       []int64 `json:"flights_bytes"`
	StreamedBytes int64   `json:"streamed_bytes,omitempty"`
	DataRounds    int     `json:"data_rounds"`
	// RoundTrips counts the handshake plus the data rounds: what a user
	// sees as "time from SYN to last byte in RTTs".
	RoundTrips int `json:"round_trips"`
	// Seconds runs from the client's SYN to the last byte received.
	Seconds float64 `json:"seconds"`
	// FirstToLastSeconds runs from the first data byte to the last.
	FirstToLastSeconds float64 `json:"first_to_last_s"`
}

// tcpDefaultScalingRatio is the ratio a 6.6+ socket starts with before it
// has measured any skb (TCP_DEFAULT_SCALING_RATIO, include/net/tcp.h).
const tcpDefaultScalingRatio = 0.5

// InitialRwnd returns the window a Linux receiver offers in its SYN-ACK
// (tcp_select_initial_window): at most 64 KB since 4.19 (commit
// a337531b942b), where the route's initrwnd can only lower it; before
// 4.19, 10 segments unless the route's initrwnd raises it. The receive
// buffer (tcp_rmem[1] x the initial ratio) bounds both.
func InitialRwnd(k Version, rmemDefault int64, mss, initRwnd int, ratio float64) int64 {
	if rmemDefault == 0 {
		rmemDefault = 131072
	}
	if k == (Version{}) || k.atLeast(6, 6) {
		ratio = tcpDefaultScalingRatio
	}
	space := int64(float64(rmemDefault) * ratio)
	if k == (Version{}) || k.atLeast(4, 19) {
		w := min(space, MaxUnscaledWindow)
		if initRwnd > 0 {
			w = min(w, int64(initRwnd*mss))
		}
		return w
	}
	segs := 10
	if initRwnd > 0 {
		segs = initRwnd
	}
	return min(space, MaxUnscaledWindow, int64(segs*mss))
}

// TransferTime models delivering in.TransferBytes over a new connection
// with the ends described by r (their window caps).
func TransferTime(in Input, r Result) Transfer {
	in = in.withDefaults()
	mss := int64(in.MSS)
	t := Transfer{
		Bytes:    in.TransferBytes,
		Segments: (in.TransferBytes + mss - 1) / mss,
		MSS:      in.MSS,
		InitCwnd: in.InitCwnd,
	}
	// What each end can ever allow in flight.
	rcvCap, sndCap := float64(MaxWindow), float64(MaxWindow)
	if r.Receiver.WindowBytes > 0 {
		rcvCap = r.Receiver.WindowBytes
	}
	if r.Sender.WindowBytes > 0 {
		sndCap = r.Sender.WindowBytes
	}
	pipe := BDP(in.RateBps/float64(in.Flows), in.RTT)
	cwnd := float64(int64(in.InitCwnd) * mss)
	rwnd := float64(InitialRwnd(in.Kernel, in.Rmem.Default, in.MSS, in.InitRwnd, in.RecvRatio.Value))
	t.InitRwndBytes = int64(rwnd)
	switch first := min(cwnd, rwnd, rcvCap, sndCap); first {
	case cwnd:
		t.FirstFlightLimit = "initcwnd"
	case rwnd:
		t.FirstFlightLimit = "initrwnd"
	default:
		t.FirstFlightLimit = "buffer"
	}

	rtt, rate := in.RTT.Seconds(), in.RateBps/float64(in.Flows)
	remaining := float64(in.TransferBytes)
	var last float64 // bytes in the final round, serialized at the rate
	for remaining > 0 {
		flight := math.Floor(min(cwnd, rwnd, rcvCap, sndCap))
		if flight < 1 {
			flight = 1
		}
		if flight >= pipe || flight >= remaining {
			// The pipe is full (the rest streams at the rate) or this
			// round carries the rest.
			t.DataRounds++
			t.Flights = appendFlight(t.Flights, int64(min(flight, remaining)))
			if remaining > flight {
				t.StreamedBytes = int64(remaining)
			}
			last = remaining
			break
		}
		if flight >= min(rcvCap, sndCap) {
			// Steady, window-bound: every further round carries flight.
			n := math.Ceil(remaining / flight)
			t.DataRounds += int(n)
			last = remaining - (n-1)*flight
			for i := 0; i < int(n) && len(t.Flights) < maxFlights; i++ {
				t.Flights = appendFlight(t.Flights, int64(min(flight, remaining-float64(i)*flight)))
			}
			break
		}
		t.DataRounds++
		t.Flights = appendFlight(t.Flights, int64(flight))
		remaining -= flight
		cwnd += flight     // slow start: +1 segment per segment acked
		rwnd += 2 * flight // tcp_grow_window: ~2 advmss per segment received
	}
	t.RoundTrips = 1 + t.DataRounds
	t.Seconds = float64(t.RoundTrips)*rtt + last*8/rate
	if t.DataRounds > 0 {
		t.FirstToLastSeconds = t.Seconds - 2*rtt - min(float64(mss), last)*8/rate
	}
	return t
}

const maxFlights = 64

func appendFlight(f []int64, b int64) []int64 {
	if len(f) >= maxFlights {
		return f
	}
	return append(f, b)
}
