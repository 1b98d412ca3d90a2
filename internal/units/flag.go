package units

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The flag types below implement pflag.Value (Set, String, Type): a flag
// is parsed and range-checked the moment the command line is read, so a
// command never sees an unparsed or out-of-range value. Each type records
// whether it was set; the zero Min/Max means no bound on that side. A
// bound is inclusive.

// Duration is a duration flag: --rtt 200ms.
type Duration struct {
	D        time.Duration
	Min, Max time.Duration
	set      bool
}

// Set parses and checks s.
func (d *Duration) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if v == 0 && d.Min > 0 {
		return fmt.Errorf("%q: must be greater than zero", s)
	}
	if (d.Min > 0 && v < d.Min) || (d.Max > 0 && v > d.Max) {
		return fmt.Errorf("%q is out of range: %s", s, rangeText(FormatDuration(d.Min), FormatDuration(d.Max), d.Min > 0, d.Max > 0))
	}
	d.D, d.set = v, true
	return nil
}

func (d *Duration) String() string {
	if !d.set && d.D == 0 {
		return ""
	}
	return FormatDuration(d.D)
}

// Type names the value in help text.
func (d *Duration) Type() string { return "duration" }

// IsSet reports whether the flag was given.
func (d *Duration) IsSet() bool { return d.set }

// Rate is a rate flag in bits per second: --rate 1Gbit/s.
type Rate struct {
	Bps      float64
	Min, Max float64
	set      bool
}

// Set parses and checks s.
func (r *Rate) Set(s string) error {
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	if v == 0 && r.Min > 0 {
		return fmt.Errorf("%q: must be greater than zero", s)
	}
	if (r.Min > 0 && v < r.Min) || (r.Max > 0 && v > r.Max) {
		return fmt.Errorf("%q is out of range: %s", s, rangeText(FormatRate(r.Min), FormatRate(r.Max), r.Min > 0, r.Max > 0))
	}
	r.Bps, r.set = v, true
	return nil
}

func (r *Rate) String() string {
	if !r.set && r.Bps == 0 {
		return ""
	}
	return FormatRate(r.Bps)
}

// Type names the value in help text.
func (r *Rate) Type() string { return "rate" }

// IsSet reports whether the flag was given.
func (r *Rate) IsSet() bool { return r.set }

// Size is a byte-count flag: --size 17kB.
type Size struct {
	N        int64
	Min, Max int64
	// Unit refuses a bare number: where users may mean packets (a
	// queue's length, as netem counts it), bytes must be said.
	Unit bool
	set  bool
}

// Set parses and checks s.
func (z *Size) Set(s string) error {
	if t := strings.TrimSpace(s); z.Unit {
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			return fmt.Errorf("%q: no unit: write bytes like %sB or 150kB (a bare number could be read as packets)", s, t)
		}
	}
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	if (z.Min > 0 && v < z.Min) || (z.Max > 0 && v > z.Max) {
		return fmt.Errorf("%q is out of range: %s", s, rangeText(strconv.FormatInt(z.Min, 10)+" bytes", strconv.FormatInt(z.Max, 10)+" bytes", z.Min > 0, z.Max > 0))
	}
	z.N, z.set = v, true
	return nil
}

func (z *Size) String() string {
	if !z.set && z.N == 0 {
		return ""
	}
	return strconv.FormatInt(z.N, 10)
}

// Type names the value in help text.
func (z *Size) Type() string { return "size" }

// IsSet reports whether the flag was given.
func (z *Size) IsSet() bool { return z.set }

// Percent is a fraction flag written as a percentage: --loss 0.1%. Max
// below 1 narrows the range (loss under 50%, say); 0 means 100%.
type Percent struct {
	F   float64
	Max float64
	set bool
}

// Set parses and checks s.
func (p *Percent) Set(s string) error {
	v, err := ParsePercent(s)
	if err != nil {
		return err
	}
	if p.Max > 0 && v > p.Max {
		return fmt.Errorf("%q is out of range: at most %s%%", s, strconv.FormatFloat(p.Max*100, 'f', -1, 64))
	}
	p.F, p.set = v, true
	return nil
}

func (p *Percent) String() string {
	if !p.set && p.F == 0 {
		return ""
	}
	return strconv.FormatFloat(p.F*100, 'f', -1, 64) + "%"
}

// Type names the value in help text.
func (p *Percent) Type() string { return "percent" }

// IsSet reports whether the flag was given.
func (p *Percent) IsSet() bool { return p.set }

func rangeText(lo, hi string, hasLo, hasHi bool) string {
	switch {
	case hasLo && hasHi:
		return lo + ".." + hi
	case hasLo:
		return "at least " + lo
	default:
		return "at most " + hi
	}
}

// Seconds is a duration that JSON carries as plain seconds (a float), the
// way every longhaul document writes time.
type Seconds time.Duration

// MarshalJSON writes the duration in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(s).Seconds()) }

// UnmarshalJSON reads seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("seconds: %w", err)
	}
	*s = Seconds(FromSeconds(v))
	return nil
}

// FromSeconds converts float seconds (JSON, tcp_info arithmetic) to a
// Duration, rounding to the nanosecond; beyond a Duration's range (292
// years) it saturates rather than wrap to the other sign.
func FromSeconds(s float64) time.Duration {
	ns := s*float64(time.Second) + 0.5*sign(s)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	case math.IsNaN(ns):
		return 0
	}
	return time.Duration(ns)
}

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}
