package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// pathFlags are the flags that describe a path: --rtt, --rate, --flows.
type pathFlags struct {
	rtt   units.Duration
	rate  units.Rate
	flows int
}

func (p *pathFlags) register(fs *pflag.FlagSet, flowsHelp string) {
	p.rtt = units.Duration{Min: time.Microsecond}
	p.rate = units.Rate{Min: 1e3, Max: pathmodel.MaxRate}
	fs.Var(&p.rtt, "rtt", "round-trip time of the path, e.g. 200ms, 0.2s")
	fs.Var(&p.rate, "rate", "bottleneck rate of the path, e.g. 1Gbit/s, 100Mbps, 125MB/s")
	fs.IntVar(&p.flows, "flows", 1, flowsHelp)
}

// parse returns the RTT and rate; given is false when neither was set.
func (p *pathFlags) parse() (rtt units.Duration, rate units.Rate, given bool, err error) {
	if !p.rtt.IsSet() && !p.rate.IsSet() {
		return p.rtt, p.rate, false, nil
	}
	switch {
	case !p.rtt.IsSet() || !p.rate.IsSet():
		err = usagef("--rtt and --rate go together: give both, e.g. --rtt 200ms --rate 1Gbit/s")
	case p.rtt.D <= 0:
		err = usagef("--rtt: must be greater than zero, e.g. 200ms")
	case p.rate.Bps <= 0:
		err = usagef("--rate: must be greater than zero, e.g. 1Gbit/s")
	case p.flows < 1:
		err = usagef("--flows: must be at least 1, got %d", p.flows)
	}
	return p.rtt, p.rate, err == nil, err
}

// bufferFlag is --rmem/--wmem: a "min default max" triple as in the
// sysctl, or one size meaning the maximum (min and default then take the
// kernel's defaults, capped by the maximum).
type bufferFlag struct {
	t   pathmodel.Triple
	def pathmodel.Triple
	set bool
}

func (b *bufferFlag) Set(s string) error {
	if strings.ContainsAny(strings.TrimSpace(s), " \t") {
		t, err := sysctl.ParseTriple(s)
		if err != nil {
			return fmt.Errorf("%v; write it like the sysctl: \"4096 131072 6291456\", or one size for the maximum: 64MiB", err)
		}
		b.t, b.set = t, true
		return nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return err
	}
	t := pathmodel.Triple{Min: min(b.def.Min, n), Default: min(b.def.Default, n), Max: n}
	if err := t.Validate(); err != nil {
		return err
	}
	b.t, b.set = t, true
	return nil
}

func (b *bufferFlag) String() string {
	if !b.set {
		return ""
	}
	return fmt.Sprintf("%d %d %d", b.t.Min, b.t.Default, b.t.Max)
}

func (b *bufferFlag) Type() string { return "buffer" }

// flagError rewrites pflag's "invalid argument" errors into the one-line
// form every other error has: "--rtt: "200": no unit; write a duration
// like 200ms ...".
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) && iv.GetFlag() != nil {
		return usagef("--%s: %v", iv.GetFlag().Name, iv.Unwrap())
	}
	return nil
}
