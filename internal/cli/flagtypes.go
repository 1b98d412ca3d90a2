package cli

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/audit"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/units"
)

// The typed flags of single commands: each parses and checks its value
// when the flag is set, so a bad value is reported as "--name: why"
// (flagError) before the command runs.

// roleFlag is plan's --role.
type roleFlag struct{ r plan.Role }

func (f *roleFlag) Set(s string) error {
	r, err := plan.ParseRole(s)
	if err != nil || s == "" {
		return fmt.Errorf("%q is not a role; use client (receives the data), server (sends it) or both", s)
	}
	f.r = r
	return nil
}
func (f *roleFlag) String() string { return string(f.r) }
func (f *roleFlag) Type() string   { return "role" }

// budgetFlag is plan's --memory-budget: a size or a share of RAM.
type budgetFlag struct {
	bytes int64
	share float64
	text  string
}

func (f *budgetFlag) Set(s string) error {
	bad := fmt.Errorf("%q: give a size such as 4GiB or a share of RAM such as 25%%", s)
	if strings.HasSuffix(strings.TrimSpace(s), "%") {
		share, err := units.ParsePercent(s)
		if err != nil || share <= 0 {
			return bad
		}
		f.bytes, f.share = 0, share
	} else {
		n, err := units.ParseSize(s)
		if err != nil || n <= 0 {
			return bad
		}
		f.bytes, f.share = n, 0
	}
	f.text = s
	return nil
}
func (f *budgetFlag) String() string { return f.text }
func (f *budgetFlag) Type() string   { return "size|share" }

// prefixFlag is a --dst: a prefix, or an address meaning its host
// prefix, or (withDefault) the word default.
type prefixFlag struct {
	p           netip.Prefix
	isDefault   bool
	withDefault bool
	text        string
}

func (f *prefixFlag) Set(s string) error {
	f.text = s
	if f.withDefault && s == "default" {
		f.isDefault, f.p = true, netip.Prefix{}
		return nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		addr, aerr := netip.ParseAddr(s)
		if aerr != nil {
			if f.withDefault {
				return fmt.Errorf("%q is not a prefix; write it like 203.0.113.0/24, 2001:db8::/32, or default", s)
			}
			return fmt.Errorf("%q is neither an address nor a prefix; write 203.0.113.7 or 203.0.113.0/24", s)
		}
		p = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
	}
	if f.withDefault && p.Bits() == 0 {
		return fmt.Errorf("%s covers every address: write --dst default to change the default route", s)
	}
	f.p, f.isDefault = p, false
	return nil
}
func (f *prefixFlag) String() string { return f.text }
func (f *prefixFlag) Type() string   { return "prefix" }

// severityFlag is audit's --fail-on.
type severityFlag struct{ s audit.Severity }

func (f *severityFlag) Set(s string) error {
	switch audit.Severity(s) {
	case audit.Warn, audit.Crit:
		f.s = audit.Severity(s)
		return nil
	}
	return fmt.Errorf("%q is not a severity; use warn or crit", s)
}
func (f *severityFlag) String() string { return string(f.s) }
func (f *severityFlag) Type() string   { return "severity" }

// portsFlag is the exporter's --ports: ports, comma-separated or
// repeated.
type portsFlag struct{ ports []uint16 }

func (f *portsFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q is not a port (1..65535)", p)
		}
		f.ports = append(f.ports, uint16(n))
	}
	return nil
}
func (f *portsFlag) String() string {
	s := make([]string, len(f.ports))
	for i, p := range f.ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}
func (f *portsFlag) Type() string { return "ports" }

// ccListFlag is test's --cc-phase: congestion controls by name.
type ccListFlag struct{ ccs []string }

var ccName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,15}$`)

func (f *ccListFlag) Set(s string) error {
	for _, cc := range strings.Split(s, ",") {
		cc = strings.TrimSpace(cc)
		if !ccName.MatchString(cc) {
			return fmt.Errorf("%q is not a congestion control's name (cubic, bbr, reno, ...)", cc)
		}
		if !slices.Contains(f.ccs, cc) {
			f.ccs = append(f.ccs, cc)
		}
	}
	return nil
}
func (f *ccListFlag) String() string { return strings.Join(f.ccs, ",") }
func (f *ccListFlag) Type() string   { return "cc" }
