package lab

import (
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/results"
)

// SockSample is one socket's tcp_info at T seconds after sampling began.
type SockSample struct {
	T    float64    `json:"t"`
	Sock flows.Sock `json:"sock"`
}

// ResultSample converts a socket's tcp_info to the lab results' sample
// (what the report draws).
func ResultSample(t float64, end string, k flows.Sock) results.Sample { return toSample(t, end, k) }

// toSample converts a socket's tcp_info to the results' units.
func toSample(t float64, end string, k flows.Sock) results.Sample {
	return results.Sample{
		T: t, End: end, Sock: k.Key(), State: k.State,
		CwndB:         k.Cwnd,
		InFlight:      k.Inflight,
		SndWnd:        k.SndWnd,
		RcvSpace:      k.RcvSpace,
		RTT:           k.RTT.Seconds(),
		BytesAcked:    k.BytesAcked,
		Delivered:     k.BytesAcked + k.SackedBytes,
		BytesReceived: k.BytesReceived,
		Retrans:       k.Retrans,
		DeliveryRate:  k.DeliveryBps,
		BusyS:         k.Busy.Seconds(),
		RwndLimitedS:  k.RwndLimited.Seconds(),
		SndbufLimS:    k.SndbufLimited.Seconds(),
		NotSent:       k.NotSent,
	}
}
