//go:build !linux

package flows

import "errors"

// ErrNotSupported is returned where there is no sock_diag.
var ErrNotSupported = errors.New("flows: live sockets need Linux (sock_diag)")

// Dumper reads the TCP sockets of one network namespace; on this system
// there are none to read.
type Dumper struct{}

// Open returns ErrNotSupported.
func Open(string) (*Dumper, error) { return nil, ErrNotSupported }

// Close does nothing.
func (d *Dumper) Close() {}

// Dump returns ErrNotSupported.
func (d *Dumper) Dump() ([]Sock, error) { return nil, ErrNotSupported }
