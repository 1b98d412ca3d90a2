//go:build linux

package twohost

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// setPacing caps the socket's sending rate in the kernel
// (SO_MAX_PACING_RATE, TCP's internal pacing without fq).
func setPacing(c net.Conn, bps float64) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	// At least 1 byte/s: 0 would not cap anything.
	v := max(min(bps/8, float64(^uint32(0)-1)), 1)
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(v))
	})
}

// setCC makes the socket send with congestion control cc
// (TCP_CONGESTION).
func setCC(c net.Conn, cc string) error {
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
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
	}); err != nil {
		return err
	}
	return serr
}
