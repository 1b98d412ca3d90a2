package wire

import (
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// The wire types of protocol v1 that carry measurements. They are
// twohost's own, with every JSON name written out, so that renaming a
// field of flows.Sock (or of anything else outside this file) cannot
// change what two hosts of different versions say to each other. The
// names are those v1 has used since it was released (Go's default
// names of the socket's fields at the time); testdata/wire/v1.frames holds
// the frames as they must stay (wire_test.go).

// WireSample is one socket's tcp_info at T seconds after the phase
// began, as the server streams it.
type WireSample struct {
	T    float64  `json:"t"`
	Sock WireSock `json:"sock"`
}

// WireSock is a socket's tcp_info on the wire: flows.Sock's fields in
// its units (bytes, nanoseconds for durations, bits/s).
type WireSock struct {
	Local         netip.AddrPort `json:"Local"`
	Remote        netip.AddrPort `json:"Remote"`
	Cookie        uint64         `json:"Cookie"`
	State         string         `json:"State"`
	MSS           int64          `json:"MSS"`
	Cwnd          int64          `json:"Cwnd"`
	Ssthresh      int64          `json:"Ssthresh"`
	SndWnd        int64          `json:"SndWnd"`
	RcvSpace      int64          `json:"RcvSpace"`
	Inflight      int64          `json:"Inflight"`
	SackedBytes   int64          `json:"SackedBytes"`
	NotSent       int64          `json:"NotSent"`
	RTTNs         int64          `json:"RTT"`
	MinRTTNs      int64          `json:"MinRTT"`
	BytesAcked    int64          `json:"BytesAcked"`
	BytesReceived int64          `json:"BytesReceived"`
	BytesSent     int64          `json:"BytesSent"`
	BytesRetrans  int64          `json:"BytesRetrans"`
	Retrans       int64          `json:"Retrans"`
	DataSegsOut   int64          `json:"DataSegsOut"`
	BusyNs        int64          `json:"Busy"`
	RwndLimitedNs int64          `json:"RwndLimited"`
	SndbufLimNs   int64          `json:"SndbufLimited"`
	CAState       uint8          `json:"CAState"`
	WindowScale   bool           `json:"WindowScale"`
	DeliveryBps   float64        `json:"DeliveryBps"`
	Sndbuf        int64          `json:"Sndbuf"`
	WmemQueued    int64          `json:"WmemQueued"`
	CC            string         `json:"CC"`
	// Added after v1 shipped (omitempty: a v1 peer's samples lack them
	// and a v1 peer ignores them).
	ReordSeen  int64 `json:"ReordSeen,omitempty"`
	RTOs       int64 `json:"RTOs,omitempty"`
	Reordering int64 `json:"Reordering,omitempty"`
	DSACKDups  int64 `json:"DSACKDups,omitempty"`
	RcvOOO     int64 `json:"RcvOOO,omitempty"`
}

// ToWire converts a sampler's samples for the Samples frame.
func ToWire(in []flows.Sample) []WireSample {
	out := make([]WireSample, len(in))
	for i, s := range in {
		out[i] = WireSample{T: s.T, Sock: wireSock(s.Sock)}
	}
	return out
}

// FromWire converts a Samples frame's samples back.
func FromWire(in []WireSample) []flows.Sample {
	out := make([]flows.Sample, len(in))
	for i, s := range in {
		out[i] = flows.Sample{T: s.T, Sock: s.Sock.Sock()}
	}
	return out
}

func wireSock(k flows.Sock) WireSock {
	return WireSock{
		Local: k.Local, Remote: k.Remote, Cookie: k.Cookie, State: k.State,
		MSS: k.MSS, Cwnd: k.Cwnd, Ssthresh: k.Ssthresh, SndWnd: k.SndWnd, RcvSpace: k.RcvSpace,
		Inflight: k.Inflight, SackedBytes: k.SackedBytes, NotSent: k.NotSent,
		RTTNs: int64(k.RTT), MinRTTNs: int64(k.MinRTT),
		BytesAcked: k.BytesAcked, BytesReceived: k.BytesReceived, BytesSent: k.BytesSent, BytesRetrans: k.BytesRetrans,
		Retrans: k.Retrans, DataSegsOut: k.DataSegsOut,
		BusyNs: int64(k.Busy), RwndLimitedNs: int64(k.RwndLimited), SndbufLimNs: int64(k.SndbufLimited),
		CAState: k.CAState, RTOs: k.RTOs, WindowScale: k.WindowScale, DeliveryBps: k.DeliveryBps,
		Sndbuf: k.Sndbuf, WmemQueued: k.WmemQueued, CC: k.CC,
		ReordSeen: k.ReordSeen, Reordering: k.Reordering, DSACKDups: k.DSACKDups, RcvOOO: k.RcvOOO,
	}
}

// Sock converts a wire socket to flows' socket.
func (w WireSock) Sock() flows.Sock {
	return flows.Sock{
		Local: w.Local, Remote: w.Remote, Cookie: w.Cookie, State: w.State,
		MSS: w.MSS, Cwnd: w.Cwnd, Ssthresh: w.Ssthresh, SndWnd: w.SndWnd, RcvSpace: w.RcvSpace,
		Inflight: w.Inflight, SackedBytes: w.SackedBytes, NotSent: w.NotSent,
		RTT: time.Duration(w.RTTNs), MinRTT: time.Duration(w.MinRTTNs),
		BytesAcked: w.BytesAcked, BytesReceived: w.BytesReceived, BytesSent: w.BytesSent, BytesRetrans: w.BytesRetrans,
		Retrans: w.Retrans, DataSegsOut: w.DataSegsOut,
		Busy: time.Duration(w.BusyNs), RwndLimited: time.Duration(w.RwndLimitedNs), SndbufLimited: time.Duration(w.SndbufLimNs),
		CAState: w.CAState, RTOs: w.RTOs, WindowScale: w.WindowScale, DeliveryBps: w.DeliveryBps,
		Sndbuf: w.Sndbuf, WmemQueued: w.WmemQueued, CC: w.CC,
		ReordSeen: w.ReordSeen, Reordering: w.Reordering, DSACKDups: w.DSACKDups, RcvOOO: w.RcvOOO,
	}
}
