//go:build linux

package twohost

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// planned is what the client announces in Start.PlannedS: its phases
// (as phases counts them: a download, an upload, a capacity download on
// Streams streams, one download per congestion control; the loss
// probes, which only a lossy download adds, are not counted) of
// Duration, or Rounds round trips of the control connection's RTT (the
// kernel's smoothed RTT of its handshake; at least MinPhase), no longer
// than ctx's deadline.
func (o ClientOptions) planned(ctx context.Context, c net.Conn) float64 {
	n := len(o.CCs)
	for _, on := range []bool{o.Download, o.Upload, o.Streams > 1} {
		if on {
			n++
		}
	}
	rtt := connRTT(c)
	d := o.Duration
	if d == 0 {
		d = max(time.Duration(o.Rounds)*rtt, MinPhase)
	}
	length := TestLength(n, d, rtt)
	if end, ok := ctx.Deadline(); ok {
		length = min(length, time.Until(end))
	}
	return PlannedSeconds(length)
}

// connRTT is the smoothed RTT the kernel measured on c (0 when c is not
// a TCP socket of this process).
func connRTT(c net.Conn) time.Duration {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	k, err := flows.Info(sc, netip.AddrPort{}, netip.AddrPort{})
	if err != nil {
		return 0
	}
	return k.RTT
}
