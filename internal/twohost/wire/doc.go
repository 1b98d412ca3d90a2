// Package wire is the two-host protocol, version 1: its messages and
// their checks, the frames that carry them, the UDP datagrams of a loss
// probe and the wire's own types for tcp_info samples. It does no I/O
// beyond reading and writing a frame on a reader or writer, and builds
// on every platform; the client (package twohost) and the server
// (internal/twohost/server) speak it, and prove the token with its
// ClientMAC and ServerMAC.
//
// One TCP port (DefaultPort, 9978) carries the control connection and
// the data connections of a test; every connection is opened by the
// client, so nothing a client says can make the server connect anywhere,
// read a file or run a command. A connection may be wrapped in TLS 1.3
// (crypto/tls; the client pins the server key's SHA-256 fingerprint).
//
// Every message is a frame: a 4-byte big-endian length and a JSON object
// {"v":1,"type":T,"body":{...}}. Frames before authentication may be at
// most MaxPreAuthFrame bytes, after it MaxFrame; every read has a
// deadline. On each connection:
//
//  1. the server sends hello: the protocol version and a fresh 32-byte
//     nonce;
//  2. the client sends auth: HMAC-SHA256 with the pre-shared token over a
//     label, the server's nonce, its own nonce and what the connection is
//     for (control, or data of a session's phase and stream); the server
//     compares in constant time and refuses with an error frame. A
//     replayed auth fails: the nonce is new on every connection;
//  3. the server answers welcome with its own HMAC over both nonces, so
//     the client knows it talks to a holder of the token.
//
// On the control connection the client then sends start; the server
// answers accepted (its snapshot and its caps) or error "busy" with the
// seconds to wait. The client measures the RTT with ping/pong, then asks
// for each phase (download, upload, a download of N streams); the server
// grants it within its caps (duration, bytes, rate), the client opens the
// phase's data connections, the server samples its sockets' tcp_info
// every 100 ms and streams the samples, and ends the phase with
// phase-done. The server enforces every cap itself: it stops sending or
// reading at the granted duration or the byte cap, paces its sending to
// the rate cap (SO_MAX_PACING_RATE) and reads uploads no faster than it.
package wire
