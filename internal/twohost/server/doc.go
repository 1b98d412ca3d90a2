// Package server is the far end of a two-host test: the server of
// `longhaul serve`. It answers the clients of package twohost over the
// protocol of package wire (internal/twohost/wire): it admits
// connections (connlimit's limits, --allow), checks the token's proof,
// runs one session per client (its snapshot, its caps, one phase at a
// time), moves and paces each phase's data itself, samples its own
// sockets' tcp_info and streams the samples to the client, and sends
// the datagram runs of the loss probes.
//
// It only answers: every connection is the client's, authenticated
// before anything but the hello is sent, and nothing in a message names
// a file, an address or a command. It shares the socket I/O with the
// client through package streamio and imports neither the client nor
// the judge.
package server
