package emupath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

// inputf is an error caused by the caller's input (a value the link
// model refuses): bad input, the CLI exits 2 on it.
func inputf(format string, a ...any) error { return badinput.Errorf(format, a...) }

// ErrNotRoot is returned by Up without the privileges it needs.
var ErrNotRoot = errors.New("the emulated path needs root: it creates network namespaces and TUN devices (CAP_SYS_ADMIN, CAP_NET_ADMIN); run it with sudo")

// MaxRTT is the longest round trip the emulator supports.
const MaxRTT = 10 * time.Second

// Spec describes an emulated path as a plain value: the topology
// (namespaces, per-namespace sysctls, congestion control) and the link
// model of each direction.
type Spec struct {
	Topo     topo.Spec
	Up, Down linkemu.Config
	// RTT is the sum of the two one-way delays.
	RTT time.Duration
}

// Direction is one direction of a link as a user describes it.
type Direction struct {
	Delay   time.Duration // one-way
	Jitter  time.Duration // extra delay, uniform in [0, Jitter]
	RateBps float64       // on the wire; 0 is unlimited
	Loss    float64       // random loss per segment, a fraction
	Burst   Burst         // or loss in bursts
	Outages Outages       // intervals that drop everything
	Queue   Queue         // the bottleneck queue; only with a rate
	Policer Policer       // a token bucket that drops the excess
	Reorder Reorder       // a share of packets held back
	// Schedule changes RateBps over time; the queue stays sized for
	// RateBps.
	Schedule Schedule
	// Middlebox rewrites the options of the SYNs this direction carries.
	Middlebox Middlebox
	// MTU is the link's MTU when below the hosts'.
	MTU MTU
	// Cross is competing traffic on the bottleneck; only with a rate.
	Cross Cross
}

// Link is both directions: Up is client -> server.
type Link struct {
	Up, Down Direction
	// Seed seeds loss and jitter; the down direction uses Seed+1.
	Seed int64
}

// RTT is the sum of the one-way delays.
func (l Link) RTT() time.Duration { return l.Up.Delay + l.Down.Delay }

// Configs turns the link into the two directions' models, checked.
func (l Link) Configs() (up, down linkemu.Config, err error) {
	if l.RTT() > MaxRTT {
		return up, down, inputf("rtt %v is longer than the emulator supports (%v)", l.RTT(), MaxRTT)
	}
	if up, err = l.Up.config(l.RTT(), l.Seed); err != nil {
		return up, down, err
	}
	if down, err = l.Down.config(l.RTT(), l.Seed+1); err != nil {
		return up, down, err
	}
	for _, d := range []struct {
		name string
		d    Direction
	}{{"up", l.Up}, {"down", l.Down}} {
		if err := d.d.crossFits(); err != nil {
			return up, down, inputf("%s: %v", d.name, err)
		}
	}
	for _, c := range []linkemu.Config{up, down} {
		if err := c.Validate(); err != nil {
			return up, down, inputf("link: %v", err)
		}
	}
	return up, down, nil
}

func (d Direction) config(rtt time.Duration, seed int64) (linkemu.Config, error) {
	c := linkemu.Config{Delay: d.Delay, Jitter: d.Jitter, RateBps: d.RateBps, Seed: seed, Outages: d.Outages,
		Policer: d.Policer.Policer, Reorder: d.Reorder.Reorder, Schedule: d.Schedule, Middlebox: d.Middlebox.Middlebox,
		MTU: d.MTU.Bytes, MTUBlackhole: d.MTU.Blackhole, Cross: d.Cross.Cross}
	loss, err := d.lossModel()
	if err != nil {
		return c, err
	}
	c.Loss = loss
	if d.RateBps > 0 { // without a rate there is no bottleneck and no queue
		c.QueueBytes, c.QueuePackets = d.Queue.limits(d.RateBps, rtt)
	}
	return c, nil
}

// crossFits refuses competing traffic at or above the lowest rate the
// link ever has (its rate, or a step of its schedule): it would take the
// whole bottleneck, every packet of the run would be dropped and the run
// would end only at its deadline, which looks like a broken emulator
// rather than the setting it is.
func (d Direction) crossFits() error {
	if !d.Cross.Enabled() || d.RateBps <= 0 {
		return nil // no cross traffic, or no rate: linkemu's own check says so
	}
	low := d.RateBps
	for _, s := range d.Schedule {
		low = min(low, s.RateBps)
	}
	if d.Cross.RateBps >= low {
		return fmt.Errorf("cross traffic %s is not below the link's rate %s: it would take the whole bottleneck and drop every packet; give a cross rate below the rate (and below every step of a rate schedule)",
			units.FormatRate(d.Cross.RateBps), units.FormatRate(low))
	}
	return nil
}

// Symmetric is a link with the same rate, loss and queue each way and the
// RTT split in two halves. A zero queue is one BDP.
func Symmetric(rtt time.Duration, rateBps, loss float64, queueBytes int64, seed int64) Link {
	q := Queue{Bytes: queueBytes}
	if queueBytes == 0 {
		q = Queue{BDPs: 1}
	}
	d := Direction{RateBps: rateBps, Loss: loss, Queue: q}
	up, down := d, d
	up.Delay, down.Delay = rtt/2, rtt-rtt/2
	return Link{Up: up, Down: down, Seed: seed}
}

// Queue is a bottleneck queue: bytes, packets or bandwidth-delay products
// (at most one is set). It is a pflag.Value: "25MB", "1000p", "1bdp".
type Queue struct {
	Bytes   int64
	Packets int
	BDPs    float64
}

// limits resolves the queue for a rate and RTT: a BDP-sized queue is
// floored at linkemu.MinBDPQueue.
func (q Queue) limits(rateBps float64, rtt time.Duration) (bytes int64, packets int) {
	if q.BDPs > 0 {
		return linkemu.BDPQueue(q.BDPs, rateBps, rtt), 0
	}
	return q.Bytes, q.Packets
}

// Set parses a queue: BDPs (1bdp, 0.5bdp), packets (1000p) or a size
// with its unit (150kB, 150000B). A bare number is refused: netem's limit,
// which users know, counts packets, while a size without unit is bytes.
func (q *Queue) Set(s string) error {
	t := strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return fmt.Errorf("%q: no unit: write packets like %sp (netem's limit counts packets), bytes like %sB or 150kB, or BDPs like 1bdp", s, t, t)
	}
	switch {
	case strings.HasSuffix(t, "bdp"):
		n, err := strconv.ParseFloat(strings.TrimSuffix(t, "bdp"), 64)
		if err != nil || !(n > 0) || n > 1000 {
			return fmt.Errorf("%q: write BDPs like 1bdp or 0.5bdp (more than 0, at most 1000), bytes like 25MB, or packets like 1000p", s)
		}
		*q = Queue{BDPs: n}
	case strings.HasSuffix(t, "p"):
		n, err := strconv.Atoi(strings.TrimSuffix(t, "p"))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: packets must be a whole number >= 1, like 1000p", s)
		}
		*q = Queue{Packets: n}
	default:
		n, err := units.ParseSize(t)
		if err != nil {
			return fmt.Errorf("%v; or BDPs like 1bdp, or packets like 1000p", err)
		}
		*q = Queue{Bytes: n}
	}
	return nil
}

func (q *Queue) String() string {
	switch {
	case q.BDPs > 0:
		return strconv.FormatFloat(q.BDPs, 'f', -1, 64) + "bdp"
	case q.Packets > 0:
		return strconv.Itoa(q.Packets) + "p"
	case q.Bytes > 0:
		return strconv.FormatInt(q.Bytes, 10) + "B"
	}
	return ""
}

// Type names the value in help text.
func (q *Queue) Type() string { return "queue" }

// RateText prints a rate pair the way the user wrote it.
func RateText(up, down float64) string {
	f := func(r float64) string {
		if r == 0 {
			return "unlimited"
		}
		return units.FormatRate(r)
	}
	if up == down {
		return f(up)
	}
	return fmt.Sprintf("%s up, %s down", f(up), f(down))
}
