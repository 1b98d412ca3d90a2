// Package streamio is the socket I/O both ends of a two-host test
// share: the sizes of a data stream's reads and writes, its deadlines,
// the receiving socket's low-water mark (SO_RCVLOWAT), the sender's
// unsent limit (TCP_NOTSENT_LOWAT), pacing and congestion control set on
// a socket, the MSS clamp of a dial, the phase's sockets sampled with
// getsockopt(TCP_INFO), and the process's CPU use over a phase.
//
// The client (package twohost) and the server
// (internal/twohost/server) import it; it imports neither.
package streamio
