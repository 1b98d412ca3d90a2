//go:build !linux

package twohost

import "net"

// setPacing is a no-op where SO_MAX_PACING_RATE does not exist; the
// server's own pacing of its writes still holds the rate cap.
func setPacing(net.Conn, float64) {}

// setCC does nothing where TCP_CONGESTION does not exist.
func setCC(net.Conn, string) error { return nil }
