//go:build !linux

package twohost

import (
	"net"
	"syscall"
)

// setPacing is a no-op where SO_MAX_PACING_RATE does not exist; the
// server's own pacing of its writes still holds the rate cap.
func setPacing(net.Conn, float64) {}

// setCC does nothing where TCP_CONGESTION does not exist.
func setCC(net.Conn, string) error { return nil }

// limitUnsent does nothing where TCP_NOTSENT_LOWAT does not exist.
func limitUnsent(net.Conn) {}

// clampMSS sets nothing where TCP_MAXSEG is not set this way.
func clampMSS(int) func(string, string, syscall.RawConn) error { return nil }
