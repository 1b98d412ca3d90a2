// Package diagnose turns a flow's timeline into a verdict: what limited
// the sender, for what share of the time, the numbers behind it (RTT,
// window, throughput against the ceiling the window sets, the BDP) and
// the fix in words a sysadmin can act on.
//
// It does not know where the samples came from. A [Timeline] is fed
// [Sample] values in time order: packet captures produce one per packet
// (package tcpflow, from the sender's point of view), live sockets one per
// tcp_info poll (rwnd = tcpi_snd_wnd, inflight = tcpi_unacked x MSS,
// cwnd = tcpi_snd_cwnd x MSS, the chrono counters tcpi_rwnd_limited and
// tcpi_sndbuf_limited as the Limited hints). Each interval between two
// samples is attributed to the state the first one was in, so the
// verdict is a share of time (Web100/RFC 4898's SndLimTime*, T-RAT,
// Siekkinen et al.), not a count of packets.
//
// # States, in order of precedence
//
//	zero-window     the receiver's application does not read: its window is 0, or
//	                closed (under one MSS and under half its peak: Linux never
//	                shrinks an offer, so a full buffer rarely shows 0), or the
//	                sender is pinned at a window under half the largest offered
//	rwnd-limited    in flight >= window - MSS (not "== window": senders stop a byte short)
//	window-unknown  the scale is unknown and the flight sits at its lower bound
//	loss-recovery   retransmitting, until the data in flight at the loss is acknowledged
//	app-limited     nothing in flight, or the sender ran out of data
//	sndbuf-limited  the sender's send buffer is full (tcp_info chrono only)
//	slow-start      the flight still grows by >= 1.25x per round, before any loss
//	network         congestion window bound after slow start: the path (bottleneck or loss)
//
// [Diagnose] picks the state with the most time (loss recovery and
// network counted together: both are the congestion window at work) and
// splits that into bottleneck, loss-limited and sndbuf-limited. Loss is
// counted in retransmitted bytes (a capture at a TSO sender holds 64 KB
// frames but one-MSS retransmissions), and losses while the RTT stood
// well above its minimum are the bottleneck's queue overflowing, as
// CUBIC makes a drop-tail queue do, not random loss (RTT-based loss
// discrimination). A flight that stays flat for many rounds with no
// loss and no standing queue is a full send buffer, not a congestion
// window. All arithmetic goes through package pathmodel.
//
// # Ground truth
//
// cmd/longhaul's TestIntegrationAnalyzeTruth builds a transfer for each
// verdict on an emulated path (tiny SO_RCVBUF, sleeping reader, slow
// writer, small tcp_wmem, short transfer, random loss, bottleneck, no
// window scaling) and checks the verdict; one run's captures are kept
// in internal/tcpflow/testdata/truth and judged without root.
// TestIntegrationAnalyzeTruthFaults does the same for an outage (a
// timeout stall), a peer that stops answering and bursty loss, and checks
// the retransmission kinds against the sender's kernel counters.
//
// # Stalls, answers and evidence
//
// Producers may mark an interval as the silence before a retransmission
// timeout (Sample.Stalled: loss time), as a wait with room to send and
// nothing sent (Sample.SendGap: application time) and a flight as the
// answer to a request (Sample.Turn); with DrainIsApp, a flight that drains
// and is followed only after a pause (or as an answer) is application
// time, and so is a transfer's last flight, drained or still out when the
// transfer ended (Settle), if it was its only one or an answer. Timeout
// stalls over a tenth of the time are flagged rto-stall, a receiver that
// stopped answering peer-unresponsive; either, over a third of the time
// or for good, makes the flow loss-limited.
package diagnose
