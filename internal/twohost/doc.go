// Package twohost measures and explains a real path between two hosts:
// the engine of `longhaul test` (the near end); package server
// (internal/twohost/server) is `longhaul serve` (the far end).
//
// It is the client's I/O: the client of the two-host protocol (its
// phases, the loss probes, the measurements' file test-raw/v1), test
// URL's transfers (a download or an upload against any HTTP server),
// the iperf3 client's glue. The protocol's messages, frames, proofs and
// limits are package wire's (internal/twohost/wire), whose comment
// describes version 1; the socket I/O both ends share is package
// streamio's; the judge of what a test measured is package judge's,
// and the documents test writes package testdoc's.
package twohost
