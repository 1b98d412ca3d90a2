package linkemu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// Policer is a token bucket at the link's entry, as an operator's traffic
// policer enforces a contract: a segment passes when the bucket holds its
// wire bytes (which it then takes) and is dropped otherwise. There is no
// queue: excess is lost at once, whatever the queue behind it holds. The
// bucket fills at RateBps up to Burst bytes and starts full. The zero
// value is no policer.
type Policer struct {
	RateBps float64 // token rate, bits per second on the wire
	Burst   int64   // bucket depth, wire bytes
}

// Enabled reports whether p polices anything.
func (p Policer) Enabled() bool { return p.RateBps > 0 }

func (p Policer) String() string {
	if !p.Enabled() {
		return ""
	}
	return units.FormatRate(p.RateBps) + "/" + units.FormatBytes(float64(p.Burst))
}

// ParsePolicer reads RATE/BURST, e.g. "50Mbit/s/64KB" or "50Mbit/64KB".
func ParsePolicer(s string) (Policer, error) {
	i := strings.LastIndex(s, "/")
	if i <= 0 {
		return Policer{}, fmt.Errorf("policer %q: want RATE/BURST, e.g. 50Mbit/s/64KB (50 Mbit/s, 64 KB of burst)", s)
	}
	rate, err := units.ParseRate(strings.TrimSpace(s[:i]))
	if err != nil {
		return Policer{}, fmt.Errorf("policer %q: rate: %w", s, err)
	}
	burst, err := units.ParseSize(strings.TrimSpace(s[i+1:]))
	if err != nil {
		return Policer{}, fmt.Errorf("policer %q: burst: %w", s, err)
	}
	p := Policer{RateBps: rate, Burst: burst}
	return p, p.validate(DefaultOverhead)
}

func (p Policer) validate(overhead int) error {
	switch {
	case p == Policer{}:
		return nil
	case math.IsNaN(p.RateBps) || math.IsInf(p.RateBps, 0) || p.RateBps < MinRateBps:
		return fmt.Errorf("policer rate must be at least %d bit/s (got %v)", MinRateBps, p.RateBps)
	case p.Burst < int64(MTU+overhead):
		return fmt.Errorf("policer burst of %d bytes cannot pass one %d-byte packet: give at least %d bytes", p.Burst, MTU, MTU+overhead)
	}
	return nil
}

// bucket is a Policer's state: tokens in bytes at time at.
type bucket struct {
	tokens float64
	at     time.Duration
}

// take refills the bucket up to now and takes wire bytes if it holds
// them; it reports whether the segment passes.
func (b *bucket) take(p Policer, now time.Duration, wire int64) bool {
	b.tokens = min(float64(p.Burst), b.tokens+(now-b.at).Seconds()*p.RateBps/8)
	b.at = now
	if b.tokens < float64(wire) {
		return false
	}
	b.tokens -= float64(wire)
	return true
}

// Reorder holds back a share of packets by an extra time, as a link
// aggregate (LAG) or a multipath route delivers some packets later than
// those sent after them. It is decided per packet as the data plane reads
// it (a GSO super-packet moves as one, as a burst hashed onto a slower
// member would). The zero value reorders nothing.
type Reorder struct {
	Share float64       // fraction of packets held back, in [0, 1)
	Extra time.Duration // how much later they arrive than their due time
}

// Enabled reports whether r reorders anything.
func (r Reorder) Enabled() bool { return r.Share > 0 }

func (r Reorder) String() string {
	if !r.Enabled() {
		return ""
	}
	return strconv.FormatFloat(r.Share*100, 'f', -1, 64) + "%/" + units.FormatDuration(r.Extra)
}

// ParseReorder reads SHARE/EXTRA, e.g. "1%/5ms".
func ParseReorder(s string) (Reorder, error) {
	share, extra, ok := strings.Cut(s, "/")
	if !ok {
		return Reorder{}, fmt.Errorf("reorder %q: want SHARE/EXTRA, e.g. 1%%/5ms (1%% of packets arrive 5 ms late)", s)
	}
	p, err := units.ParsePercent(strings.TrimSpace(share))
	if err != nil {
		return Reorder{}, fmt.Errorf("reorder %q: share: %w", s, err)
	}
	d, err := units.ParseDuration(strings.TrimSpace(extra))
	if err != nil {
		return Reorder{}, fmt.Errorf("reorder %q: extra delay: %w", s, err)
	}
	r := Reorder{Share: p, Extra: d}
	return r, r.validate()
}

func (r Reorder) validate() error {
	switch {
	case r == Reorder{}:
		return nil
	case !(r.Share > 0 && r.Share < 1):
		return fmt.Errorf("reorder share must be above 0 and below 100%% (got %g)", r.Share)
	case r.Extra <= 0 || r.Extra > 10*time.Second:
		return fmt.Errorf("reorder extra delay must be above 0 and at most 10s (got %v)", r.Extra)
	}
	return nil
}

// RateStep changes the bottleneck's rate At a time on the link's clock
// (the now given to Enqueue: time since the emulator started), as a radio
// link, a shared uplink or a rerouted path does.
type RateStep struct {
	At      time.Duration
	RateBps float64
}

func (s RateStep) String() string {
	return units.FormatRate(s.RateBps) + "@" + units.FormatDuration(s.At)
}

// ParseSchedule reads a comma-separated list of RATE@AT, e.g.
// "20Mbit/s@5s,100Mbit/s@10s".
func ParseSchedule(s string) ([]RateStep, error) {
	var out []RateStep
	for _, part := range strings.Split(s, ",") {
		rate, at, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("rate step %q: want RATE@AT, e.g. 20Mbit/s@5s (20 Mbit/s from 5 s after the start)", part)
		}
		r, err := units.ParseRate(strings.TrimSpace(rate))
		if err != nil {
			return nil, fmt.Errorf("rate step %q: rate: %w", part, err)
		}
		d, err := units.ParseDuration(strings.TrimSpace(at))
		if err != nil {
			return nil, fmt.Errorf("rate step %q: time: %w", part, err)
		}
		out = append(out, RateStep{At: d, RateBps: r})
	}
	return out, validSchedule(out, 1)
}

// validSchedule checks steps for a link whose base rate is base (0: none).
func validSchedule(steps []RateStep, base float64) error {
	if len(steps) == 0 {
		return nil
	}
	if base <= 0 {
		return fmt.Errorf("a rate schedule needs a rate to start from: give the link a rate too")
	}
	for i, s := range steps {
		switch {
		case s.At < 0:
			return fmt.Errorf("rate step %v: the time must not be negative", s)
		case math.IsNaN(s.RateBps) || math.IsInf(s.RateBps, 0) || s.RateBps < MinRateBps:
			return fmt.Errorf("rate step %v: the rate must be at least %d bit/s", s, MinRateBps)
		case i > 0 && s.At <= steps[i-1].At:
			return fmt.Errorf("rate step %v: steps must be in time order, each after the one before", s)
		}
	}
	return nil
}

// RateAt is the bottleneck's rate at time t of the link's clock.
func (c Config) RateAt(t time.Duration) float64 {
	r := c.RateBps
	for _, s := range c.Schedule {
		if s.At > t {
			break
		}
		r = s.RateBps
	}
	return r
}

// MinRate is the lowest rate the bottleneck runs at over the schedule.
func (c Config) MinRate() float64 {
	r := c.RateBps
	for _, s := range c.Schedule {
		r = min(r, s.RateBps)
	}
	return r
}

// MinMTU and MaxMTU bound Config.MTU: IPv4's minimum datagram every
// host must accept (RFC 791), and a jumbo frame.
const (
	MinMTU = 576
	MaxMTU = 9000
)

// validKnobs checks the policer, the reordering, the schedule and the MTU.
func (c Config) validKnobs() error {
	switch {
	case c.MTU != 0 && (c.MTU < MinMTU || c.MTU > MaxMTU):
		return fmt.Errorf("link mtu %d is out of range: give %d to %d bytes (IPv6 needs at least 1280)", c.MTU, MinMTU, MaxMTU)
	case c.MTUBlackhole && c.MTU == 0:
		return fmt.Errorf("a pmtu black hole needs a link mtu below the hosts', e.g. 1400")
	}
	if err := c.Policer.validate(c.overhead()); err != nil {
		return err
	}
	if err := c.Reorder.validate(); err != nil {
		return err
	}
	if err := c.Cross.validate(c.RateBps); err != nil {
		return err
	}
	return validSchedule(c.Schedule, c.RateBps)
}

// reschedule applies the rate steps due at now to the serializer.
func (l *Link) reschedule(now time.Duration) {
	for l.step < len(l.cfg.Schedule) && l.cfg.Schedule[l.step].At <= now {
		l.psPerByte = 8e12 / l.cfg.Schedule[l.step].RateBps
		l.step++
	}
}

// held reports whether the packet just accepted is held back (Reorder).
func (l *Link) held() bool {
	return l.cfg.Reorder.Enabled() && l.reorRNG.Float64() < l.cfg.Reorder.Share
}

// front returns the ring whose oldest entry is due first: the in-order
// deliveries or the held-back ones (in order on a tie).
func (l *Link) front() *ring[pendingEntry] {
	if l.late.len() > 0 && (l.pending.len() == 0 || l.late.front().due < l.pending.front().due) {
		return &l.late
	}
	return &l.pending
}

// Impairments lists what the direction does wrong on purpose (loss,
// outages, a policer, reordering, a changing rate), for a line that
// describes the path; empty for a clean direction.
func (c Config) Impairments() []string {
	var out []string
	add := func(on bool, what string) {
		if on {
			out = append(out, what)
		}
	}
	add(c.Loss != nil, "loss")
	add(len(c.Outages) > 0, "outages")
	add(c.Policer.Enabled(), "policer "+c.Policer.String())
	add(c.Reorder.Enabled(), "reordering "+c.Reorder.String())
	add(c.Middlebox.Enabled(), "middlebox "+c.Middlebox.String())
	add(c.Cross.Enabled(), "cross traffic "+c.Cross.String())
	add(c.MTU > 0 && !c.MTUBlackhole, "mtu "+strconv.Itoa(c.MTU))
	add(c.MTU > 0 && c.MTUBlackhole, "mtu "+strconv.Itoa(c.MTU)+" black hole")
	if len(c.Schedule) > 0 {
		steps := make([]string, len(c.Schedule))
		for i, st := range c.Schedule {
			steps[i] = st.String()
		}
		add(true, "rate schedule "+strings.Join(steps, ","))
	}
	return out
}

// Middlebox rewrites the options of the TCP SYNs (and SYN-ACKs) that
// cross the link, as a firewall, a NAT or a load balancer does: an MSS
// clamped below the hosts' own, a window scale option stripped (both
// ends then fall back to windows of at most 64 KB) or changed (the
// ends disagree on the window's unit). The zero value changes nothing.
// The data plane applies it (tun.RewriteSYN); the model only carries it.
type Middlebox struct {
	ClampMSS int        // lower a larger MSS option to this; 0 leaves it
	WScale   WScaleEdit // what happens to the window scale option
	Shift    uint8      // the shift WScaleSet writes
}

// WScaleEdit is what a Middlebox does to the window scale option.
type WScaleEdit uint8

// Window scale edits.
const (
	WScaleKeep  WScaleEdit = iota // leave it
	WScaleStrip                   // replace it with NOPs
	WScaleSet                     // write Middlebox.Shift
)

// Enabled reports whether m rewrites anything.
func (m Middlebox) Enabled() bool { return m != Middlebox{} }

func (m Middlebox) String() string {
	var parts []string
	if m.ClampMSS > 0 {
		parts = append(parts, "mss="+strconv.Itoa(m.ClampMSS))
	}
	switch m.WScale {
	case WScaleStrip:
		parts = append(parts, "wscale=strip")
	case WScaleSet:
		parts = append(parts, "wscale="+strconv.Itoa(int(m.Shift)))
	}
	return strings.Join(parts, ",")
}

// ParseMiddlebox reads a comma-separated list of mss=N (clamp the MSS
// option to N bytes) and wscale=strip or wscale=N (a shift of 0-14).
func ParseMiddlebox(s string) (Middlebox, error) {
	var m Middlebox
	const hint = "want mss=N and/or wscale=strip|0-14, e.g. mss=1200,wscale=strip"
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		switch {
		case !ok:
			return Middlebox{}, fmt.Errorf("middlebox %q: %s", part, hint)
		case k == "mss" && (err != nil || n < 88 || n > 65495):
			return Middlebox{}, fmt.Errorf("middlebox %q: the MSS clamp must be a whole number of bytes from 88 to 65495", part)
		case k == "mss":
			m.ClampMSS = n
		case k == "wscale" && v == "strip":
			m.WScale = WScaleStrip
		case k == "wscale" && (err != nil || n < 0 || n > 14):
			return Middlebox{}, fmt.Errorf("middlebox %q: the window scale is strip or a shift from 0 to 14 (RFC 7323)", part)
		case k == "wscale":
			m.WScale, m.Shift = WScaleSet, uint8(n)
		default:
			return Middlebox{}, fmt.Errorf("middlebox %q: %s", part, hint)
		}
	}
	return m, nil
}

// Cross is competing traffic the emulator itself puts on the bottleneck:
// full-size packets at RateBps that take serialization time and queue
// space from the link's own traffic and are never delivered, as an
// unresponsive flow (video, a backup over UDP) sharing the bottleneck
// does. With On and Off it is bursty: RateBps for On, silence for Off,
// from the link's start. The zero value is none.
type Cross struct {
	RateBps float64
	On, Off time.Duration
}

// crossWire is the wire size of a cross-traffic packet.
const crossWire = MTU + DefaultOverhead

// Enabled reports whether c sends anything.
func (c Cross) Enabled() bool { return c.RateBps > 0 }

func (c Cross) String() string {
	if !c.Enabled() {
		return ""
	}
	s := units.FormatRate(c.RateBps)
	if c.On > 0 {
		s += "/" + units.FormatDuration(c.On) + "/" + units.FormatDuration(c.Off)
	}
	return s
}

// ParseCross reads RATE (constant) or RATE/ON/OFF (bursts), e.g.
// "30Mbit/s" or "80Mbit/s/200ms/800ms".
func ParseCross(s string) (Cross, error) {
	parts := strings.Split(s, "/")
	// A rate may itself hold one slash ("30Mbit/s").
	rateEnd := 1
	if len(parts) == 2 || len(parts) == 4 {
		rateEnd = 2
	}
	const hint = "want RATE or RATE/ON/OFF, e.g. 30Mbit/s or 80Mbit/s/200ms/800ms"
	if len(parts)-rateEnd != 0 && len(parts)-rateEnd != 2 {
		return Cross{}, fmt.Errorf("cross traffic %q: %s", s, hint)
	}
	r, err := units.ParseRate(strings.Join(parts[:rateEnd], "/"))
	if err != nil {
		return Cross{}, fmt.Errorf("cross traffic %q: rate: %w", s, err)
	}
	c := Cross{RateBps: r}
	if len(parts) > rateEnd {
		if c.On, err = units.ParseDuration(parts[rateEnd]); err != nil {
			return Cross{}, fmt.Errorf("cross traffic %q: on time: %w", s, err)
		}
		if c.Off, err = units.ParseDuration(parts[rateEnd+1]); err != nil {
			return Cross{}, fmt.Errorf("cross traffic %q: off time: %w", s, err)
		}
	}
	return c, c.validate(1)
}

// validate checks c for a link whose rate is rate (0: none).
func (c Cross) validate(rate float64) error {
	switch {
	case c == Cross{}:
		return nil
	case math.IsNaN(c.RateBps) || math.IsInf(c.RateBps, 0) || c.RateBps < MinRateBps:
		return fmt.Errorf("cross traffic rate must be at least %d bit/s (got %v)", MinRateBps, c.RateBps)
	case rate <= 0:
		return fmt.Errorf("cross traffic shares a bottleneck: give the link a rate too")
	case c.On < 0 || c.Off < 0 || (c.On > 0) != (c.Off > 0):
		return fmt.Errorf("cross traffic bursts need both an on and an off time above 0 (got %v, %v)", c.On, c.Off)
	}
	return nil
}

// cross runs the competing traffic up to now: each of its packets due by
// then enters the queue at its own time (or is dropped there, full).
func (l *Link) cross(now time.Duration) {
	c := l.cfg.Cross
	gap := max(time.Duration(float64(crossWire*8)/c.RateBps*float64(time.Second)), 1)
	// A stretch without the link's own traffic is accounted, not played
	// packet by packet, up to its last crossReplay: the queue then holds
	// what it would have.
	if skip := now - crossReplay - l.crossAt; skip > 0 {
		n := int64(skip / gap)
		share := min(1, l.cfg.RateAt(now)/c.RateBps)
		if c.On > 0 {
			share *= float64(c.On) / float64(c.On+c.Off)
		}
		l.st.CrossBytes += int64(float64(n*crossWire) * share)
		l.crossAt += time.Duration(n) * gap
	}
	for l.crossAt <= now {
		t := l.crossAt
		if c.On > 0 {
			if phase := t % (c.On + c.Off); phase >= c.On {
				l.crossAt = t - phase + c.On + c.Off // the next burst
				continue
			}
		}
		tPs := int64(t) * 1000
		l.drain(tPs)
		if l.queueFull(crossWire) {
			l.st.CrossDrops++
		} else {
			l.serialize(tPs, crossWire)
			l.st.CrossBytes += crossWire
		}
		l.crossAt = t + gap
	}
}

// crossReplay is how much of a stretch without the link's own traffic the
// cross traffic plays packet by packet (Link.cross).
const crossReplay = 100 * time.Millisecond
