// Package iperf3 is a client of iperf3's control protocol, so that longhaul
// can test a path against an unmodified iperf3 server (iperf3 -s), the kind
// perfSONAR nodes, labs and public test hosts already run. It is pure Go:
// no cgo, no iperf3 binary.
//
// It speaks TCP tests only: the 37-byte cookie, the server's one-byte
// states, the length-prefixed JSON of the parameter and result exchange,
// one to 128 data streams, forward (this host sends) or reverse (the server
// sends). It always asks for the server's output (get_server_output): from
// a server run with -J that is JSON whose intervals carry, when the server
// sends on Linux, its tcp_info (cwnd, RTT, retransmissions, the peer's
// window); from a plain server it is text, whose intervals carry the
// retransmissions and cwnd rounded to three digits. What it sends is what
// iperf3's own client sends, checked against recordings of iperf 3.12 in
// testdata/; the fields are those every server from 3.1 reads, typed as
// 3.17+ servers check them.
//
// Everything a server can make it do is bounded: each wait for the server
// (Options.StateTimeout), each dial, and the whole test (Options.Bound:
// the dials, the duration and five waits); the JSON a server may send (4
// MiB for the results with its output, allocated only as it arrives); the
// intervals kept; the streams. Every connection is closed and every
// goroutine has ended when Run returns, on every path. Errors are one line
// that says what the server did and what to do: busy, authentication
// required, not an iperf3 server, a timeout and in which state.
package iperf3
