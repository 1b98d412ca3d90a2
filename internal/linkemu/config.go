package linkemu

import (
	"fmt"
	"math"
	"time"
)

const (
	// DefaultOverhead is the per-segment wire overhead in bytes used when
	// Config.Overhead is 0: Ethernet header 14 + FCS 4 + preamble 8 +
	// inter-frame gap 12.
	DefaultOverhead = 38
	// NoOverhead, as Config.Overhead, counts only IP bytes on the wire.
	NoOverhead = -1
	// DefaultMaxLateness is used when Config.MaxLateness is 0.
	DefaultMaxLateness = 5 * time.Millisecond
	// DefaultMaxPending is used when Config.MaxPending is 0: the number of
	// accepted packets (super-packets count once) that may wait for delivery
	// in the model. It covers 1 Gbit/s x 500 ms (one way, queue included) of
	// 1500-byte packets without GSO; the data plane must be able to hold as many buffers.
	DefaultMaxPending = 1 << 16
	// MTU is the packet size a byte queue must at least hold.
	MTU = 1500
	// MinRateBps is the lowest non-zero rate accepted.
	MinRateBps = 1000
)

// Config describes one direction of an emulated link. The zero value is an
// unlimited, lossless link without delay.
type Config struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter adds a uniform extra delay in [0, Jitter] per packet without
	// reordering (a due time is never earlier than the previous one).
	Jitter time.Duration
	// RateBps is the bottleneck rate in bits per second on the wire
	// (IP length + Overhead per segment); 0 means unlimited.
	RateBps float64
	// Overhead is the per-segment wire overhead in bytes added to the IP
	// length for serialization and byte queue accounting. 0 selects
	// DefaultOverhead (38); NoOverhead (or any negative value) selects none.
	Overhead int
	// QueueBytes limits the bottleneck queue in wire bytes; QueuePackets in
	// segments. At most one may be non-zero; both 0 means unlimited. The
	// queue only exists when RateBps > 0.
	QueueBytes   int64
	QueuePackets int
	// Loss decides random loss per segment; nil means no loss.
	Loss LossModel
	// Outages drop every segment for their interval (counted as loss).
	Outages []Outage
	// Policer drops what exceeds a token bucket at the link's entry
	// (before the queue); the zero value polices nothing.
	Policer Policer
	// Reorder holds back a share of packets by an extra delay.
	Reorder Reorder
	// Schedule changes RateBps over time (RateBps holds until the first
	// step); it needs RateBps > 0. The queue limits stay as set.
	Schedule []RateStep
	// Middlebox rewrites the options of TCP SYNs crossing the link.
	Middlebox Middlebox
	// MTU is the link's MTU when below the hosts' (0: the hosts'). A
	// packet over it that may not be fragmented is dropped, and the
	// sender told with ICMP "fragmentation needed" or ICMPv6 "packet too
	// big", unless MTUBlackhole suppresses the message (a PMTU black
	// hole). The data plane applies it (tun.Info.TooBig).
	MTU          int
	MTUBlackhole bool
	// Cross is competing traffic on the bottleneck; it needs RateBps > 0.
	Cross Cross
	// Seed seeds the deterministic random sources (loss and jitter).
	Seed int64
	// MaxLateness is the delivery lateness (reported with Link.Delivered)
	// above which the run counts as overloaded. 0 selects
	// DefaultMaxLateness; a negative value disables the check.
	MaxLateness time.Duration
	// MaxPending bounds the accepted packets waiting for delivery in the
	// model; above it packets are dropped as overload. 0 selects
	// DefaultMaxPending.
	MaxPending int
}

// overhead returns the effective per-segment overhead.
func (c Config) overhead() int {
	switch {
	case c.Overhead == 0:
		return DefaultOverhead
	case c.Overhead < 0:
		return 0
	}
	return c.Overhead
}

// MinQueueBytes is the smallest valid QueueBytes: one MTU-sized packet plus
// the per-segment overhead.
func (c Config) MinQueueBytes() int64 {
	return int64(MTU + c.overhead())
}

// Validate reports the first problem with c as a one-line lowercase error.
func (c Config) Validate() error {
	switch {
	case c.Delay < 0:
		return fmt.Errorf("delay must not be negative (got %v)", c.Delay)
	case c.Jitter < 0:
		return fmt.Errorf("jitter must not be negative (got %v)", c.Jitter)
	case math.IsNaN(c.RateBps) || math.IsInf(c.RateBps, 0):
		return fmt.Errorf("rate must be a finite number of bits per second (got %v)", c.RateBps)
	case c.RateBps < 0:
		return fmt.Errorf("rate must not be negative (got %v bit/s)", c.RateBps)
	case c.RateBps > 0 && c.RateBps < MinRateBps:
		return fmt.Errorf("rate %v bit/s is below the minimum of %d bit/s (use 0 for unlimited)", c.RateBps, MinRateBps)
	case c.QueueBytes < 0:
		return fmt.Errorf("queue bytes must not be negative (got %d)", c.QueueBytes)
	case c.QueuePackets < 0:
		return fmt.Errorf("queue packets must not be negative (got %d)", c.QueuePackets)
	case c.QueueBytes != 0 && c.QueuePackets != 0:
		return fmt.Errorf("set at most one queue limit: bytes (%d) or packets (%d)", c.QueueBytes, c.QueuePackets)
	case c.QueueBytes != 0 && c.QueueBytes < c.MinQueueBytes():
		return fmt.Errorf("queue of %d bytes is smaller than one %d-byte packet: the minimum is %d bytes (%d + %d overhead)",
			c.QueueBytes, MTU, c.MinQueueBytes(), MTU, c.overhead())
	case c.MaxPending < 0:
		return fmt.Errorf("max pending must not be negative (got %d)", c.MaxPending)
	}
	if c.Loss != nil {
		if err := c.Loss.Validate(); err != nil {
			return err
		}
	}
	if err := validOutages(c.Outages); err != nil {
		return err
	}
	return c.validKnobs()
}

// MinBDPQueue floors a BDP-sized queue at 100 full-size packets on the
// wire: with a near-zero RTT one BDP is a single packet, and a 1 Gbit/s
// path then carried 2 Mbit/s. Real links queue at least what a NIC ring
// holds.
const MinBDPQueue = 100 * (MTU + DefaultOverhead)

// BDPQueue is the byte limit of a drop-tail queue of n bandwidth-delay
// products for a wire rate in bit/s and a round-trip time (the "1bdp"
// queue), floored at MinBDPQueue. It is 0 (no queue: no bottleneck) when
// the rate is 0 or not finite.
func BDPQueue(n, rate float64, rtt time.Duration) int64 {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0
	}
	return max(int64(n*rate/8*rtt.Seconds()), MinBDPQueue)
}
