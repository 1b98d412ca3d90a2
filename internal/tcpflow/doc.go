// Package tcpflow follows the TCP connections in a packet capture, one
// state machine per flow and direction, and reduces each direction to a
// diagnose.Timeline seen from the sender's side, plus the numbers a
// verdict cites.
//
// # Per direction
//
// Sequence numbers are unwrapped to 64 bits relative to the ISN (or the
// first byte seen when the capture starts mid-stream). The tracker keeps
// the highest byte sent and acknowledged, a SACK scoreboard (so bytes in
// flight exclude SACKed data), the receiver's window scaled by the shift
// from the handshake, and classifies every segment below the highest
// byte sent: a retransmission (fast after duplicate ACKs or SACK, a tail
// loss probe, RTO otherwise: see stall.go; spurious when the data was
// already acknowledged, a D-SACK reports it, or without SACK an ACK
// echoes the first send's timestamp), a hardware duplicate (the same segment captured twice:
// same IPv4 ID, or same TSval for IPv6; a capture artefact, not loss),
// reordering (a hole filled within a quarter RTT), a keep-alive or a
// zero-window probe (one byte or none at snd.una-1, told apart by the
// peer's window). Zero-window stalls run from a zero window (or a closed
// one: under a segment and under half the largest offered, which is what
// Linux advertises when the reader stops) to the next open one.
//
// # Window scale in three states
//
// Known (both SYNs carry the option), not negotiated (one SYN lacks it:
// the window cannot exceed 65,535 bytes) and unknown (no handshake in the
// capture). While unknown, raw windows are not scaled; a flight larger
// than raw << k proves the shift is above k, and the lower bound is
// reported.
//
// # Vantage point
//
// The handshake splits the path at the capture point: SYN to SYN-ACK is
// capture-server-capture, SYN-ACK to ACK capture-client-capture. The
// sender's view lags the capture by its own half: an ACK seen at time t
// reaches the sender later, so the flight the sender had is
// sent(t) - acked(t - D), with D the sender's half, and the path RTT is D
// plus the data-to-ACK time measured at the capture. A capture next to
// the receiver thus still sees the sender pinned at the window.
//
// # Clock
//
// Timestamps going backwards are clamped, jumps of more than an hour
// (epoch outliers, clock steps) are cut out, and a coarse capture clock
// (all timestamps on 1 ms or coarser ticks, or most packets sharing a
// timestamp) is reported; when the tick exceeds half the RTT no verdict
// is given (capture-limited).
//
// Memory grows with flows, not with packets: every per-flow structure is
// bounded, and the series for --timeline is downsampled to a fixed size.
package tcpflow
