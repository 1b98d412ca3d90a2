package cli

import (
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/pflag"
)

// pathFlags are the flags that describe a path: --rtt, --rate, --flows.
type pathFlags struct {
	rtt, rate string
	flows     int
}

func (p *pathFlags) register(fs *pflag.FlagSet, flowsHelp string) {
	fs.StringVar(&p.rtt, "rtt", "", "round-trip time of the path, e.g. 200ms, 0.2s")
	fs.StringVar(&p.rate, "rate", "", "bottleneck rate of the path, e.g. 1Gbit/s, 100Mbps, 125MB/s")
	fs.IntVar(&p.flows, "flows", 1, flowsHelp)
}

// parse returns the RTT and rate; given is false when neither was set.
func (p *pathFlags) parse() (rtt time.Duration, rate float64, given bool, err error) {
	if p.rtt == "" && p.rate == "" {
		return 0, 0, false, nil
	}
	if p.rtt == "" || p.rate == "" {
		return 0, 0, false, usagef("--rtt and --rate go together: give both, e.g. --rtt 200ms --rate 1Gbit/s")
	}
	if rtt, err = units.ParseDuration(p.rtt); err != nil {
		return 0, 0, false, usagef("--rtt: %v", err)
	}
	if rtt <= 0 {
		return 0, 0, false, usagef("--rtt: must be greater than zero, e.g. 200ms")
	}
	if rate, err = units.ParseRate(p.rate); err != nil {
		return 0, 0, false, usagef("--rate: %v", err)
	}
	if rate <= 0 {
		return 0, 0, false, usagef("--rate: must be greater than zero, e.g. 1Gbit/s")
	}
	if p.flows < 1 {
		return 0, 0, false, usagef("--flows: must be at least 1, got %d", p.flows)
	}
	return rtt, rate, true, nil
}

// parseBuffer reads --rmem/--wmem: a "min default max" triple as in the
// sysctl, or one size meaning the maximum (min and default then take the
// kernel's defaults, capped by the maximum).
func parseBuffer(flag, s string, def pathmodel.Triple) (pathmodel.Triple, error) {
	if strings.ContainsAny(strings.TrimSpace(s), " \t") {
		t, err := sysctl.ParseTriple(s)
		if err != nil {
			return t, usagef("--%s: %v; write it like the sysctl: \"4096 131072 6291456\", or one size for the maximum: 64MiB", flag, err)
		}
		return t, nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return pathmodel.Triple{}, usagef("--%s: %v", flag, err)
	}
	t := pathmodel.Triple{Min: min(def.Min, n), Default: min(def.Default, n), Max: n}
	if err := t.Validate(); err != nil {
		return t, usagef("--%s: %v", flag, err)
	}
	return t, nil
}

// parseSizeFlag parses an optional size flag ("" means 0).
func parseSizeFlag(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, usagef("--%s: %v", flag, err)
	}
	return n, nil
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
