//go:build !linux

package streamio

import (
	"net"
	"syscall"
)

// SetPacing is a no-op where SO_MAX_PACING_RATE does not exist; the
// server's own pacing of its writes still holds the rate cap.
func SetPacing(net.Conn, float64) {}

// SetCC does nothing where TCP_CONGESTION does not exist.
func SetCC(net.Conn, string) error { return nil }

// LimitUnsent does nothing where TCP_NOTSENT_LOWAT does not exist.
func LimitUnsent(net.Conn) {}

// ClampMSS sets nothing where TCP_MAXSEG is not set this way.
func ClampMSS(int) func(string, string, syscall.RawConn) error { return nil }
