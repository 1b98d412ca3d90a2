package pathmodel

import (
	"math"
	"time"
)

// MaxTransfer is the largest transfer TransferTime times: 1 PB.
const MaxTransfer = 1_000_000_000_000_000

// Input describes a path and, optionally, the settings of its two ends.
// Zero values mean "not given"; Compute fills in kernel defaults where the
// model needs one and says so in the result.
type Input struct {
	RTT           time.Duration
	RateBps       float64 // bottleneck rate, bits/s
	Flows         int     // parallel flows sharing the rate; 0 means 1
	TransferBytes int64   // a short transfer to time; 0 means none

	Rmem, Wmem               Triple // tcp_rmem / tcp_wmem of the receiver / sender
	CoreRmemMax, CoreWmemMax int64  // net.core.rmem_max / wmem_max
	SoRcvbuf, SoSndbuf       int64  // the application's SO_RCVBUF / SO_SNDBUF request

	TCPMemPages [3]int64 // net.ipv4.tcp_mem: min, pressure, max in pages
	PageSize    int64    // bytes per page; 0 means 4096
	RAMBytes    int64

	Kernel    Version // picks the initial receive window rule; zero means current
	RecvRatio Ratio   // window share of the receive buffer; zero means the 6.6+ default
	MSS       int     // 0 means DefaultMSS
	InitCwnd  int     // segments; 0 means DefaultInitCwnd
	InitRwnd  int     // segments (route initrwnd); 0 means the kernel default
}

// End is one end's buffer against the path.
type End struct {
	// NeededBytes is the buffer maximum (tcp_rmem[2] or tcp_wmem[2]) one
	// flow needs for its share of the BDP at this end's ratio.
	NeededBytes int64 `json:"buffer_needed_bytes"`
	// BufferBytes is the largest buffer the end can use (0: not given).
	BufferBytes int64   `json:"buffer_bytes,omitempty"`
	Source      string  `json:"source,omitempty"` // what set BufferBytes
	Ratio       float64 `json:"ratio"`
	WindowBytes float64 `json:"window_bytes,omitempty"`
	// WindowBasis says how WindowBytes follows from the buffer: ratio x
	// buffer (a receiver), that plus the skb being filled (a sender), or
	// a sender's floor of two super-packets.
	WindowBasis string `json:"window_basis,omitempty"`
	// CeilingBps is the rate one flow can reach with this buffer; the
	// aggregate of all flows is Flows times that.
	CeilingBps          float64  `json:"ceiling_bps,omitempty"`
	AggregateCeilingBps float64  `json:"aggregate_ceiling_bps,omitempty"`
	Autotuning          bool     `json:"autotuning"`
	SockBuf             *SockBuf `json:"sockbuf,omitempty"`
}

// Result is the model's answer for an Input.
type Result struct {
	RTTSeconds   float64   `json:"rtt_s"`
	RateBps      float64   `json:"rate_bps"`
	Flows        int       `json:"flows"`
	BDPBytes     int64     `json:"bdp_bytes"`
	FlowBDPBytes int64     `json:"flow_bdp_bytes"`
	Receiver     End       `json:"receiver"`
	Sender       End       `json:"sender"`
	ExpectedBps  float64   `json:"expected_bps"`
	LimitedBy    string    `json:"limited_by"` // path, receiver, sender
	Memory       *Memory   `json:"memory,omitempty"`
	Transfer     *Transfer `json:"transfer,omitempty"`
	RecvRatio    Ratio     `json:"receive_ratio"`
}

// Validate rejects inputs that cannot describe a real path.
func (in Input) Validate() error {
	switch {
	case in.RTT <= 0:
		return inputErr("rtt must be greater than zero")
	case in.RTT > 10*time.Minute:
		return inputErr("rtt %v is longer than any real path (max 10m)", in.RTT)
	case in.RateBps <= 0 || math.IsInf(in.RateBps, 0) || math.IsNaN(in.RateBps):
		return inputErr("rate must be greater than zero")
	case in.RateBps > MaxRate:
		return inputErr("rate %g bit/s is faster than any real path (max 10 Tbit/s)", in.RateBps)
	case in.Flows < 0 || in.Flows > 1_000_000:
		return inputErr("flows must be between 1 and 1000000")
	case in.TransferBytes < 0:
		return inputErr("transfer size must not be negative")
	case in.TransferBytes > MaxTransfer:
		// Beyond it the time overflows what a duration holds (9e18 bytes
		// printed a negative time).
		return inputErr("transfer size %d bytes is more than this model times (at most 1 PB)", in.TransferBytes)
	case in.RateBps > 0 && float64(in.TransferBytes)*8/in.RateBps > 1e9:
		return inputErr("a transfer of %d bytes at %g bit/s takes over 30 years: give a smaller --size or a faster --rate", in.TransferBytes, in.RateBps)
	case in.MSS != 0 && (in.MSS < 88 || in.MSS > 65483):
		return inputErr("mss %d out of range: TCP allows 88..65483 bytes", in.MSS)
	case in.InitCwnd < 0 || in.InitCwnd > MaxInitWindow:
		return inputErr("initcwnd %d out of range 1..%d segments", in.InitCwnd, MaxInitWindow)
	case in.InitRwnd < 0 || in.InitRwnd > MaxInitWindow:
		return inputErr("initrwnd %d out of range 1..%d segments", in.InitRwnd, MaxInitWindow)
	case in.SoRcvbuf < 0 || in.SoSndbuf < 0 || in.CoreRmemMax < 0 || in.CoreWmemMax < 0:
		return inputErr("buffer sizes must not be negative")
	case in.SoRcvbuf > MaxBuffer || in.SoSndbuf > MaxBuffer || in.CoreRmemMax > MaxBuffer || in.CoreWmemMax > MaxBuffer:
		return inputErr("buffer sizes must not exceed %d, the kernel's int limit", MaxBuffer)
	case in.RAMBytes < 0 || in.PageSize < 0:
		return inputErr("memory sizes must not be negative")
	}
	for _, t := range []Triple{in.Rmem, in.Wmem} {
		if !t.IsZero() {
			if err := t.Validate(); err != nil {
				return err
			}
		}
	}
	if in.TCPMemPages != [3]int64{} {
		m := in.TCPMemPages
		if m[0] <= 0 || m[0] > m[1] || m[1] > m[2] {
			return inputErr("tcp_mem %d %d %d: must be positive and ordered min <= pressure <= max pages", m[0], m[1], m[2])
		}
	}
	if in.RecvRatio.Value < 0 || in.RecvRatio.Value > 1 {
		return inputErr("window/buffer ratio %g out of range 0..1", in.RecvRatio.Value)
	}
	return nil
}

func (in Input) withDefaults() Input {
	if in.Flows == 0 {
		in.Flows = 1
	}
	if in.MSS == 0 {
		in.MSS = DefaultMSS
	}
	if in.InitCwnd == 0 {
		in.InitCwnd = DefaultInitCwnd
	}
	if in.PageSize == 0 {
		in.PageSize = 4096
	}
	if in.RecvRatio.Value == 0 {
		in.RecvRatio = ReceiveRatio(Version{}, 0, false)
	}
	return in
}

// Compute runs the model.
func Compute(in Input) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	in = in.withDefaults()
	bdp := BDP(in.RateBps, in.RTT)
	flowBDP := bdp / float64(in.Flows)
	r := Result{
		RTTSeconds:   in.RTT.Seconds(),
		RateBps:      in.RateBps,
		Flows:        in.Flows,
		BDPBytes:     int64(math.Round(bdp)),
		FlowBDPBytes: int64(math.Round(flowBDP)),
		RecvRatio:    in.RecvRatio,
	}
	r.Receiver = endFor(in, flowBDP, true)
	r.Sender = endFor(in, flowBDP, false)

	r.ExpectedBps, r.LimitedBy = in.RateBps, "path"
	for _, e := range []struct {
		end  End
		name string
	}{{r.Receiver, "receiver"}, {r.Sender, "sender"}} {
		if e.end.BufferBytes > 0 && e.end.AggregateCeilingBps < r.ExpectedBps {
			r.ExpectedBps, r.LimitedBy = e.end.AggregateCeilingBps, e.name
		}
	}
	if in.TCPMemPages != [3]int64{} || in.RAMBytes > 0 {
		m := memoryFor(in, r)
		r.Memory = &m
	}
	if in.TransferBytes > 0 {
		t := TransferTime(in, r)
		r.Transfer = &t
	}
	return r, nil
}

// endFor models the receiving (rcv) or sending end.
func endFor(in Input, flowBDP float64, rcv bool) End {
	ratio, triple, core, sockReq := SendRatio, in.Wmem, in.CoreWmemMax, in.SoSndbuf
	src := "net.ipv4.tcp_wmem max"
	if rcv {
		ratio, triple, core, sockReq = in.RecvRatio.Value, in.Rmem, in.CoreRmemMax, in.SoRcvbuf
		src = "net.ipv4.tcp_rmem max"
	}
	e := End{NeededBytes: BufferFor(min(flowBDP, MaxWindow), ratio), Ratio: ratio, Autotuning: true}
	switch {
	case sockReq > 0:
		sb := SetSockBuf(sockReq, core, rcv, ratio, in.RTT)
		e.SockBuf = &sb
		e.BufferBytes, e.Autotuning = sb.BufferBytes, false
		e.Source = "SO_RCVBUF (autotuning off)"
		if !rcv {
			e.Source = "SO_SNDBUF (autotuning off)"
		}
	case !triple.IsZero():
		e.BufferBytes, e.Source = triple.Max, src
	default:
		return e
	}
	if rcv {
		space := min(ReceiveSpace(e.BufferBytes, ratio, in.MSS), MaxWindow)
		first, wscale := firstSpace(in, e)
		if e.Autotuning && float64(e.BufferBytes-RcvReserve)*ratio < float64(2*in.MSS) {
			// Too small a buffer to grow the window past its first
			// value (tcp_grow_window needs room for another segment's
			// truesize): a 4 KiB receiver offers 1,408 bytes all along.
			space = min(space, float64(AlignWindow(first, wscale, false)))
		}
		maxWindow := max(space, float64(AlignWindow(first, wscale, true)))
		e.WindowBytes = MSSWindow(space, SenderSegment(maxWindow, in.MSS))
		e.WindowBasis = WindowOfRatio
	} else {
		share := min(float64(e.BufferBytes)*ratio+SendOvershoot, MaxWindow)
		e.WindowBytes, e.WindowBasis = share, WindowOfRatioAndSkb
		if floor := MinSendInFlight(in.MSS); floor > share {
			e.WindowBytes, e.WindowBasis = floor, WindowOfFloor
		}
	}
	if e.SockBuf != nil {
		e.SockBuf.WindowBytes = e.WindowBytes
		e.SockBuf.CeilingBps = WindowCeiling(e.WindowBytes, in.RTT)
	}
	e.CeilingBps = WindowCeiling(e.WindowBytes, in.RTT)
	e.AggregateCeilingBps = e.CeilingBps * float64(in.Flows)
	return e
}

// firstSpace is the receiver's space when its handshake completes
// (FirstSpace) and its window scale, for an end whose buffer is known.
func firstSpace(in Input, e End) (int64, int) {
	initial, maxBuf := in.Rmem.Default, max(in.Rmem.Max, in.CoreRmemMax)
	if e.SockBuf != nil {
		initial, maxBuf = e.BufferBytes, e.BufferBytes
	}
	return FirstSpace(InitialRwnd(in.Kernel, initial, in.MSS, in.InitRwnd, e.Ratio), in.MSS), WindowScale(maxBuf)
}

// MSSWindow is what a window of space bytes carries per round trip: whole
// segments. A receiver without window scaling advertises a multiple of
// the MSS (__tcp_select_window; the seed's server: 3,854 bytes of space
// -> 2,896), and a sender with more data queued only sends full segments
// into the window (tcp_snd_wnd_test). Less than one MSS is used as is.
func MSSWindow(space float64, mss int) float64 {
	if mss <= 0 || space < float64(mss) {
		return space
	}
	return math.Floor(space/float64(mss)) * float64(mss)
}

// MinSendInFlight is what a Linux sender keeps in flight however small
// its send buffer: tcp_sendmsg may always fill the skb it is building up
// to the GSO size goal (64 KB) and one more is on the wire, so about two
// 64 KB super-packets (measured: 4 KiB to 64 KiB tcp_wmem all carried
// ~130 KB per round trip at 200 ms).
func MinSendInFlight(mss int) float64 {
	if mss <= 0 {
		mss = DefaultMSS
	}
	return float64(2 * (65536 / mss) * mss)
}

// Values of End.WindowBasis.
const (
	WindowOfRatio       = "ratio"      // ratio x buffer
	WindowOfRatioAndSkb = "ratio+skb"  // ratio x buffer + SendOvershoot
	WindowOfFloor       = "send-floor" // MinSendInFlight: two super-packets
)

// SendOvershoot is what a sender keeps in flight beyond its share of
// the send buffer: tcp_sendmsg admits a write while the queue is under
// the buffer and then fills the skb it is building up to the 64 KB size
// goal, half a super-packet on average. Measured (lab buffers, sender
// tcp_wmem 256 KiB..16 MiB at 200 ms, 3 repeats): 221 KB in flight with
// 256 KiB, 780 KB with 1 MiB, 1,523 KB with 2 MiB, 6.2 MB with 8 MiB,
// which 0.72 x buffer + 32 KiB meets within 2% (0.72 alone was 17% low
// at 256 KiB).
const SendOvershoot = 32768

// RcvReserve is the receive buffer a bulk receiver holds in data that has
// arrived but that the application has not read yet when its ACK goes
// out, so the window it advertises leaves it out: one received
// super-packet's truesize, measured at 4.05-4.24 KB with 16 KiB, 64 KiB
// and 256 KiB buffers (the advertised windows 8,064, 40,704 and 171,264
// bytes; `longhaul lab buffers --case 'client-*'`).
const RcvReserve = 4096

// ReceiveSpace is the window a receiver with a buffer of buf bytes
// offers: ratio x (buf - RcvReserve). A window of under two segments is
// only updated after the application reads (the ACK waits for it), so
// there the whole buffer counts (the upload seed's 5,840-byte buffer
// offers 3,854 bytes, two segments).
func ReceiveSpace(buf int64, ratio float64, mss int) float64 {
	if mss <= 0 {
		mss = DefaultMSS
	}
	if w := float64(buf-RcvReserve) * ratio; w >= float64(2*mss) {
		return w
	}
	return float64(buf) * ratio
}
