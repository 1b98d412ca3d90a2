//go:build linux

package streamio

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// WithFD runs set on the socket under c (a TLS connection's too); nil
// when c has no socket.
func WithFD(c net.Conn, set func(fd int) error) error {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return OnRaw(rc, set)
}

// OnRaw runs set on a raw connection's descriptor.
func OnRaw(rc syscall.RawConn, set func(fd int) error) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = set(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// SetPacing caps the socket's sending rate in the kernel
// (SO_MAX_PACING_RATE, TCP's internal pacing without fq).
func SetPacing(c net.Conn, bps float64) {
	// At least 1 byte/s: 0 would not cap anything.
	v := max(min(bps/8, float64(^uint32(0)-1)), 1)
	_ = WithFD(c, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(v)) })
}

// SetCC makes the socket send with congestion control cc
// (TCP_CONGESTION).
func SetCC(c net.Conn, cc string) error {
	return WithFD(c, func(fd int) error { return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc) })
}

// ClampMSS is a Dialer.Control that sets TCP_MAXSEG before connect: the
// SYN then offers that MSS, and neither end sends larger segments.
func ClampMSS(mss int) func(network, address string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		return OnRaw(rc, func(fd int) error { return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss) })
	}
}

// LimitUnsent keeps at most unsentLowat bytes written but not yet sent
// in the socket (TCP_NOTSENT_LOWAT): a phase's stream then ends soon
// after its time instead of draining a send buffer autotuned to
// megabytes at the flow's rate (a loss-limited flow at 15 Mbit/s took 4 s
// more to drain 8 MB).
func LimitUnsent(c net.Conn) {
	_ = WithFD(c, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, unsentLowat)
	})
}
