// Package exporter is `longhaul exporter`: a Prometheus exporter of what
// limits the host's TCP flows, per peer group.
//
// # Counters that survive socket close
//
// A sampler dumps the sockets (package flows, sock_diag) every interval
// and keeps, per socket cookie, the last tcp_info it saw. Each sample adds
// every socket's counter deltas (busy time, rwnd/sndbuf-limited time,
// bytes, retransmitted segments) to its peer group's totals. When the
// kernel frees a socket it broadcasts the socket's final tcp_info (the
// sock_diag destroy groups, CAP_NET_ADMIN); the listener folds the delta
// since the last sample into the group, so a flow that closed between two
// samples, or lived entirely between them, is counted. Group totals only
// grow: they are Prometheus counters. A socket that left the dumps keeps
// its last counters for ten minutes (at most 65,536 such), so that a late
// notification (sent when the socket is freed, which waits for the
// application's close) adds only the rest; after that it counts as a
// missed close.
//
// Sockets present at the first sample are taken as a baseline: the
// counters say what happened since the exporter started.
//
// # Time limited, by reason
//
// tcpi_busy_time is the time a socket had data to send; of it
// tcpi_rwnd_limited the peer's receive window held it back and
// tcpi_sndbuf_limited its own send buffer (the kernel's "chrono" stats).
// The rest of the busy time is the congestion window's (cwnd: slow start,
// recovery or the path). In intervals in which a socket sent data, the
// time it was not busy is app-limited. So, per group,
//
//	limited{rwnd} + limited{sndbuf} + limited{cwnd} = busy
//	limited{app} = sending socket-seconds - busy
//
// # Cardinality
//
// Peers are folded into groups: the named CIDRs of --peer-group (longest
// prefix wins), then the /24 (IPv4) or /48 (IPv6) of peers that moved at
// least 1 Mbit/s in a sample, while there is room for them under
// --max-series, and "other". A /24 or /48 group that moved nothing for ten
// minutes is retired (its series end) and its slot freed. Every series
// counts against --max-series; series over the cap are dropped and
// counted in longhaul_exporter_series_dropped_total. Per-socket series
// exist only with --per-flow.
package exporter
