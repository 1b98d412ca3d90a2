//go:build !linux

package rtnl

// Gather is not available off Linux.
func Gather() (State, error) { return State{}, ErrNotSupported }
