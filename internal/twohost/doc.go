// Package twohost measures and explains a real path between two hosts:
// the engine of `longhaul serve` (the far end) and `longhaul test` (the
// near end).
//
// It is the I/O: the client and the server of the two-host protocol,
// test URL's transfers, the iperf3 client's glue. The protocol's
// messages, frames and limits are package wire's (internal/twohost/wire),
// whose comment describes version 1; the judge of what a test measured
// is package judge's, and the documents test writes package testdoc's.
package twohost
