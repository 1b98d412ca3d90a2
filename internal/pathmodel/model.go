package pathmodel

import (
	"fmt"
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
)

const (
	// DefaultScalingRatio is the window/buffer ratio Linux 6.6+ settles at
	// on 1500-byte paths (skb len / truesize), measured on longhaul's lab.
	DefaultScalingRatio = 0.66
	// SendRatio is the share of the send buffer a sender-bound flow keeps
	// in flight on average, measured in longhaul's lab on Linux 6.18
	// (0.67-0.77 from 256 KiB to 16 MiB, at 50 and 200 ms; `longhaul lab
	// buffers --case 'server-*'`): the write queue is charged truesize and
	// the writer is only woken when a third of the buffer is free
	// (sk_stream_min_wspace), so the queue swings between 2/3 and full.
	SendRatio = 0.72
	// DefaultMSS is the payload of a 1500-byte packet with TCP timestamps.
	DefaultMSS = 1448
	// DefaultInitCwnd is the Linux initial congestion window since 3.0
	// (RFC 6928, IW10), in segments.
	DefaultInitCwnd = 10
	// MaxRate bounds a path's rate (10 Tbit/s), so that every product of
	// a rate and an RTT up to 10 minutes fits an int64 of bytes.
	MaxRate = 10e12
	// MaxBuffer is the largest value tcp_rmem/tcp_wmem/rmem_max can hold:
	// the fields are C ints (bpftune #36 overflowed past it).
	MaxBuffer = math.MaxInt32
	// MaxWindow is the largest window TCP can advertise: 65535 << 14
	// (RFC 7323 caps the window scale shift at 14).
	MaxWindow = 65535 << 14
	// MaxInitWindow bounds initcwnd/initrwnd in the model, in segments.
	MaxInitWindow = 1024
	// MaxUnscaledWindow is the window cap when scaling is not negotiated.
	MaxUnscaledWindow = 65535
	// sockMinRcvbuf and sockMinSndbuf mirror SOCK_MIN_RCVBUF and
	// SOCK_MIN_SNDBUF (include/net/sock.h) on x86_64.
	sockMinRcvbuf = 2304
	sockMinSndbuf = 4608
)

// inputErr is a model input that cannot describe a real path: bad
// input, the command line exits 2.
func inputErr(format string, a ...any) error { return badinput.Errorf(format, a...) }

// Triple is a tcp_rmem or tcp_wmem value: min, default, max in bytes.
type Triple struct {
	Min     int64 `json:"min"`
	Default int64 `json:"default"`
	Max     int64 `json:"max"`
}

// IsZero reports whether the triple was not given.
func (t Triple) IsZero() bool { return t == Triple{} }

// Validate checks what the kernel would accept: positive, ordered
// min <= default <= max, and within a C int.
func (t Triple) Validate() error {
	switch {
	case t.Min <= 0 || t.Default <= 0 || t.Max <= 0:
		return inputErr("buffer triple %d %d %d: values must be positive", t.Min, t.Default, t.Max)
	case t.Min > t.Default || t.Default > t.Max:
		return inputErr("buffer triple %d %d %d: must be ordered min <= default <= max", t.Min, t.Default, t.Max)
	case t.Max > MaxBuffer:
		return inputErr("buffer triple max %d exceeds %d, the kernel's int limit", t.Max, MaxBuffer)
	}
	return nil
}

// Version is a kernel version, enough to pick the window model.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

func (v Version) atLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// Ratio is the share of a receive buffer a kernel advertises as window.
type Ratio struct {
	Value float64 `json:"value"`
	Basis string  `json:"basis"`
}

// ReceiveRatio picks the window/buffer ratio for a kernel. advWinScale is
// net.ipv4.tcp_adv_win_scale when the host has it (haveAdv), used only
// before 6.6. A zero Version means unknown and assumes a current kernel.
func ReceiveRatio(v Version, advWinScale int, haveAdv bool) Ratio {
	if v == (Version{}) || v.atLeast(6, 6) {
		return Ratio{DefaultScalingRatio, "Linux 6.6+ scaling_ratio (skb len/truesize), ~0.66 on 1500-byte paths"}
	}
	scale := advWinScale
	if !haveAdv {
		scale = 1 // default since 3.4
		if !v.atLeast(3, 4) {
			scale = 2
		}
	}
	return AdvWinScaleRatio(scale)
}

// AdvWinScaleRatio mirrors tcp_win_from_space() before 6.6:
// scale > 0: space - (space >> scale); scale <= 0: space >> -scale.
func AdvWinScaleRatio(scale int) Ratio {
	scale = max(-31, min(31, scale))
	v := math.Ldexp(1, scale) // 2^scale for scale <= 0
	if scale > 0 {
		v = 1 - math.Ldexp(1, -scale)
	}
	return Ratio{v, fmt.Sprintf("Linux before 6.6: tcp_adv_win_scale=%d gives window = %.3g x buffer", scale, v)}
}

// BDP returns the bandwidth-delay product in bytes.
func BDP(rateBps float64, rtt time.Duration) float64 {
	return rateBps / 8 * rtt.Seconds()
}

// WindowCeiling is the throughput, in bits/s, one flow can reach with at
// most window bytes in flight per round trip.
func WindowCeiling(window float64, rtt time.Duration) float64 {
	if rtt <= 0 {
		return math.Inf(1)
	}
	return window * 8 / rtt.Seconds()
}

// BufferFor returns the buffer (bytes) whose window covers need bytes at
// the given ratio, rounded up.
func BufferFor(need, ratio float64) int64 {
	return int64(math.Ceil(need / ratio))
}

// Headroom multiplies a buffer need before it becomes a recommended
// maximum: the RTT grows by the bottleneck's queueing delay under load and
// the measured window/buffer ratio varies with packet sizes, so a buffer
// of exactly the need would fall just short. 1.25 keeps the result well
// within 2x.
const Headroom = 1.25

// PlannedBuffer is the buffer maximum to recommend for a need: need x
// Headroom rounded up to a MiB (64 KiB below 1 MiB), at most MaxBuffer
// rounded down to a MiB. It is the one size plan writes and audit's
// findings print for the same path.
func PlannedBuffer(need int64) int64 {
	const mib = 1 << 20
	t := int64(math.Ceil(float64(need) * Headroom))
	step := int64(mib)
	if t < mib {
		step = 64 << 10
	}
	t = (t + step - 1) / step * step
	return min(t, MaxBuffer&^(mib-1))
}

// SockBuf is what the kernel does with SO_RCVBUF/SO_SNDBUF: the request is
// clamped to net.core.rmem_max (wmem_max), doubled for overhead, floored at
// SOCK_MIN_*BUF, and autotuning is turned off for that socket
// (net/core/sock.c sk_setsockopt, SOCK_RCVBUF_LOCK).
type SockBuf struct {
	RequestedBytes int64   `json:"requested_bytes"`
	CoreMaxBytes   int64   `json:"core_max_bytes"`
	Clamped        bool    `json:"clamped"`
	BufferBytes    int64   `json:"buffer_bytes"`
	WindowBytes    float64 `json:"window_bytes"`
	CeilingBps     float64 `json:"ceiling_bps"`
	Autotuning     bool    `json:"autotuning"`
}

// SetSockBuf models setsockopt(SO_RCVBUF) when receive is true, else
// SO_SNDBUF, with ratio the window share of the resulting buffer.
func SetSockBuf(requested, coreMax int64, receive bool, ratio float64, rtt time.Duration) SockBuf {
	s := SockBuf{RequestedBytes: requested, CoreMaxBytes: coreMax}
	v := requested
	if coreMax > 0 && v > coreMax {
		v, s.Clamped = coreMax, true
	}
	floor := int64(sockMinSndbuf)
	if receive {
		floor = sockMinRcvbuf
	}
	s.BufferBytes = max(2*v, floor)
	s.WindowBytes = min(float64(s.BufferBytes)*ratio, MaxWindow)
	s.CeilingBps = WindowCeiling(s.WindowBytes, rtt)
	return s
}

// MathisBps is the most a loss-based congestion control (Reno, CUBIC at
// long RTTs) carries on one flow when a share lossRate of its segments
// is lost at random: MSS/RTT x C/sqrt(p), C = sqrt(3/2) (Mathis, Semke,
// Mahdavi, Ott 1997). 0 when an input is missing.
func MathisBps(mss int, rtt time.Duration, lossRate float64) float64 {
	if mss <= 0 || rtt <= 0 || lossRate <= 0 {
		return 0
	}
	return float64(mss) * 8 / rtt.Seconds() * math.Sqrt(1.5) / math.Sqrt(lossRate)
}
