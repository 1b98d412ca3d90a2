// Package linkemu is the pure model of one direction of an emulated long
// path: propagation delay, jitter without reordering, a rate-limited
// serializer (its rate optionally on a schedule), a drop-tail bottleneck
// queue, a token-bucket policer, reordering and random loss. It does no I/O,
// starts no goroutines and never reads the clock: every call takes the
// current time as a time.Duration offset from an epoch the caller chooses
// (typically time.Since(start) on the monotonic clock), and the same inputs
// with the same Config.Seed give the same outputs.
//
// The data plane (TUN reader/writer) drives one Link per direction:
//
//	v := l.Enqueue(now, pkt, handle) // for each packet read at time now
//	...
//	for {
//		h, v, ok := l.PopDue(now) // oldest accepted packet, once due
//		if !ok { break }
//		start := clock()
//		write(h, v) // whole super-packet, or one surviving run of it
//		l.Delivered(v.Due, start, prevEnd)
//		prevEnd = clock()
//	}
//	due, ok := l.NextDue() // arm the timer for the next departure
//
// # Model
//
// The model follows the lessons measured on this machine (see
// shared/notes/emulator.md in the project notes):
//
//   - Lesson 3, analytic link. A virtual "link free at" clock stands for the
//     bottleneck serializer. A segment of W wire bytes (IP length plus
//     Config.Overhead, 38 bytes of Ethernet framing by default) starts at
//     max(now, linkFreeAt) and finishes W*8/RateBps seconds later; it is due
//     for delivery at finish + Delay (+ jitter). With RateBps 0 the link is
//     unlimited and a segment finishes at now. The serializer is tracked in
//     picoseconds, so 1538 wire bytes at 1 Gbit/s take exactly 12.304 µs and
//     rounding does not accumulate. Due times are rounded up to nanoseconds.
//
//   - Drop-tail queue. The queue holds the segments whose transmission has
//     not finished at now (including the one being serialized), computed
//     from the virtual clock. A segment is dropped when accepting it would
//     take the queue past QueueBytes (wire bytes) or QueuePackets
//     (segments). Dropped segments, whether by loss or by the queue, do not
//     consume serialization time.
//
//   - Lesson 1, GSO super-packets. A Packet may carry many TCP segments
//     (virtio_net_hdr + TSO). Loss and the queue limit are decided per
//     segment, in order, exactly as if the segments had arrived one by one;
//     loss is decided before the queue (a lost segment never enters it).
//     When no segment is dropped the super-packet passes whole, due at the
//     departure of its last segment, and the data plane never has to split
//     it. When some are dropped, the Verdict lists the surviving segments as
//     contiguous runs, each due at the departure of its own last segment,
//     and only then does the data plane split. Dropping whole super-packets
//     instead would make loss some 45x burstier than on a real link.
//
//   - Jitter. Each packet (or run) gets a uniform extra delay in
//     [0, Jitter], but its due time is clamped to be no earlier than the
//     previous one: jitter never reorders. Because delay is constant and
//     jitter is clamped, due times are monotonic and a ring FIFO is enough
//     for the pending deliveries (lesson 3); Reorder adds a second one. A consequence of the clamp:
//     when packets are much closer together than Jitter, each due time is
//     the running maximum of recent draws, so jitter then adds close to
//     Jitter to every packet (more delay, little variation) rather than
//     spreading them.
//
//   - Path failures. A Policer is a token bucket checked per segment after
//     loss and before the queue: a segment passes when the bucket holds
//     its wire bytes, else it is dropped (DropCounts.Policer) without
//     consuming serialization time; the bucket starts full. A Schedule
//     changes the serializer's rate at set times; a segment's departure is
//     fixed when the queue takes it, so what is queued at a step leaves at
//     the old rate. Reorder holds a share of packets (decided per packet,
//     all runs of a split packet together) back by an extra delay: they
//     go to a second FIFO, also in due order because the extra delay is
//     constant, and PopDue takes from whichever FIFO is due first.
//
//   - Lesson 2, bounded emulator lateness. The pending-delivery FIFO is
//     bounded by Config.MaxPending packets; a packet arriving while it is
//     full is dropped whole as an overload drop, counted apart from queue and
//     loss drops. The data plane reports each write with Delivered; the
//     lateness (actual - due) feeds a fixed-size histogram (p50, p99, max),
//     and a write later than Config.MaxLateness (5 ms by default; lesson 4
//     measured ~1 ms mean lateness for Go timers) counts as overload too.
//     Stats.Overloaded then marks the run invalid: its results must be
//     flagged, not reported. On an unlimited link the data plane itself is
//     the bottleneck: packets due together leave one write after another,
//     at its speed, as behind any real link's serializer. That wait is
//     reported apart (Stats.WaitP50/P99/Max) and only the rest of the
//     lateness, the slip (a late wake-up, a descheduled writer), counts
//     there. On a rate-limited link every late write counts: the
//     serializer already spaced the departures, so waiting behind earlier
//     writes means the data plane cannot keep the configured rate.
//
// Rates are bits per second on the wire, including the per-segment overhead:
// a 1 Gbit/s link carries 1448-byte TCP payloads at about 1e9 x 1448/1538.
//
// The model is not safe for concurrent use; the data plane serializes calls
// to one Link (one direction).
package linkemu
