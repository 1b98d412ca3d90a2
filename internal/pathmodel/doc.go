// Package pathmodel is longhaul's single source of truth for TCP path
// arithmetic: bandwidth-delay product, the window a buffer allows, the
// throughput ceiling that window sets at an RTT, the buffers each end needs,
// round trips to deliver a short transfer from initcwnd/initrwnd, the
// SO_RCVBUF/SO_SNDBUF clamp, and the memory N flows take against tcp_mem.
//
// Every command (calc, audit, plan, analyze, lab and the report) calls this
// package so that they never disagree. It is pure: numbers in, numbers out,
// no I/O and no formatting.
//
// # Window versus buffer
//
// A receiver does not advertise its whole buffer: part of it pays for the
// kernel's per-packet overhead (sk_buff truesize). Before Linux 6.6 the share
// was fixed by net.ipv4.tcp_adv_win_scale (window = space - space>>scale, so
// 1/2 with the default 1, 3/4 with the pre-3.4 default 2). Since 6.6 (commit
// dfa2f0483360, "tcp: get rid of sysctl_tcp_adv_win_scale") the kernel
// measures scaling_ratio = skb->len / skb->truesize per socket; on 1500-byte
// paths it settles near 0.66, the value measured on longhaul's lab paths.
//
// On the sending side the write queue is charged skb truesize too, and
// the application is only woken to refill it when a third of the buffer
// is free (sk_stream_min_wspace), so the queue swings between two thirds
// and all of tcp_wmem[2]: a sender-bound flow averages about 0.72 of it in
// flight (SendRatio, measured by `longhaul lab buffers`), plus about half
// a 64 KB super-packet the application was admitted to build
// (SendOvershoot), and never less than two super-packets (MinSendInFlight).
//
// With tiny receive buffers the kernel's small-window rules decide: the
// window stays at its first value (FirstSpace, AlignWindow) and the sender
// cuts segments of half the largest window it has seen (SenderSegment).
//
// # Short transfers
//
// Transfer models slow start round by round: the sender may have
// min(cwnd, rwnd) in flight; cwnd grows by the bytes acknowledged (doubling
// per RTT, RFC 5681 with Linux counting acked segments), and the receiver's
// window grows by about two segments per segment received
// (tcp_grow_window), up to what its buffer allows. The handshake costs one
// round trip before the request can be sent.
package pathmodel
