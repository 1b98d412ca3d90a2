//go:build linux

package server

// WriteDatagram is how a run's datagrams are sent, for the tests to make
// it slow.
var WriteDatagram = &writeDatagram
