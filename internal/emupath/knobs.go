package emupath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// Policer is a direction's token-bucket policer as a pflag.Value:
// "50Mbit/s/64KB" (RATE/BURST).
type Policer struct{ linkemu.Policer }

// Set parses RATE/BURST.
func (p *Policer) Set(s string) error {
	v, err := linkemu.ParsePolicer(s)
	if err != nil {
		return err
	}
	p.Policer = v
	return nil
}

// Type names the value in help text.
func (p *Policer) Type() string { return "rate/burst" }

// Reorder is a direction's reordering as a pflag.Value: "1%/5ms"
// (SHARE/EXTRA).
type Reorder struct{ linkemu.Reorder }

// Set parses SHARE/EXTRA.
func (r *Reorder) Set(s string) error {
	v, err := linkemu.ParseReorder(s)
	if err != nil {
		return err
	}
	r.Reorder = v
	return nil
}

// Type names the value in help text.
func (r *Reorder) Type() string { return "share/extra" }

// Schedule is a direction's rate over time as a pflag.Value:
// "20Mbit/s@5s,100Mbit/s@10s" (RATE@AT after the start).
type Schedule []linkemu.RateStep

// Set parses a comma-separated list.
func (s *Schedule) Set(v string) error {
	steps, err := linkemu.ParseSchedule(v)
	if err != nil {
		return err
	}
	*s = steps
	return nil
}

func (s *Schedule) String() string {
	parts := make([]string, len(*s))
	for i, x := range *s {
		parts[i] = x.String()
	}
	return strings.Join(parts, ",")
}

// Type names the value in help text.
func (s *Schedule) Type() string { return "schedule" }

// Middlebox is a direction's SYN rewriting as a pflag.Value:
// "mss=1200,wscale=strip".
type Middlebox struct{ linkemu.Middlebox }

// Set parses the rewrite.
func (m *Middlebox) Set(s string) error {
	v, err := linkemu.ParseMiddlebox(s)
	if err != nil {
		return err
	}
	m.Middlebox = v
	return nil
}

// Type names the value in help text.
func (m *Middlebox) Type() string { return "rewrite" }

// MTU is a direction's link MTU below the hosts' as a pflag.Value: "1400"
// (ICMP errors tell the sender) or "1400/blackhole" (they are
// suppressed: a PMTU black hole).
type MTU struct {
	Bytes     int
	Blackhole bool
}

// Set parses BYTES or BYTES/blackhole.
func (m *MTU) Set(s string) error {
	n, mode, _ := strings.Cut(strings.TrimSpace(s), "/")
	b, err := strconv.Atoi(n)
	if err != nil || (mode != "" && mode != "blackhole") {
		return fmt.Errorf("%q: want the link's MTU in bytes, e.g. 1400, or 1400/blackhole to suppress the ICMP errors", s)
	}
	v := MTU{Bytes: b, Blackhole: mode == "blackhole"}
	if err := (linkemu.Config{MTU: v.Bytes, MTUBlackhole: v.Blackhole}).Validate(); err != nil {
		return err
	}
	*m = v
	return nil
}

func (m *MTU) String() string {
	switch {
	case m.Bytes == 0:
		return ""
	case m.Blackhole:
		return strconv.Itoa(m.Bytes) + "/blackhole"
	}
	return strconv.Itoa(m.Bytes)
}

// Type names the value in help text.
func (m *MTU) Type() string { return "bytes" }

// Cross is a direction's competing traffic as a pflag.Value: "30Mbit/s"
// or "80Mbit/s/200ms/800ms" (RATE/ON/OFF bursts).
type Cross struct{ linkemu.Cross }

// Set parses RATE or RATE/ON/OFF.
func (c *Cross) Set(s string) error {
	v, err := linkemu.ParseCross(s)
	if err != nil {
		return err
	}
	c.Cross = v
	return nil
}

// Type names the value in help text.
func (c *Cross) Type() string { return "rate[/on/off]" }
