package plan

import (
	"fmt"
	"net/netip"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// A plan is read from a file or made from a snapshot another host wrote
// (ssh far longhaul audit --json | longhaul plan --snapshot -): before
// its fields are written into a file another tool reads (emit) or printed
// (audit --against), each is checked against an allow-list, so that a
// newline, a quote, an escape code or a shell character can never become
// a line of a sysctl.d file, a play of a playbook, a command or a forged
// line of a report.

// Allowed characters and lengths of the fields the formats carry.
var (
	// hostChars: RFC 1123 host names (letters, digits, '-', '.'), and '_'
	// which real host names carry.
	hostChars = charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
	// kernelChars: uname -r ("6.1.0-27-amd64", "5.14.0-427.el9.x86_64+rt").
	kernelChars = charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._+~")
	// keyChars: sysctl keys in dotted form, interface names included
	// (net.ipv6.conf.eth0.accept_ra, net.ipv4.conf.br-lan.rp_filter).
	keyChars = charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/@")
	// valueChars: numbers and word lists (tcp_rmem's "4096 131072
	// 6291456", "reno cubic bbr").
	valueChars = charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -._,")
	// devChars: interface names as the kernel accepts them for routes.
	devChars = charset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._@")
)

const (
	maxHost   = 253
	maxKernel = 128
	maxKey    = 256
	maxValue  = 256
	maxDev    = 15 // IFNAMSIZ - 1
)

type charset string

func (c charset) allows(s string) bool {
	for _, r := range s {
		if r > 127 {
			return false
		}
		ok := false
		for _, a := range c {
			if r == a {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// CheckFields refuses, as bad input, a plan with a field no host has
// and no file could carry as data: a host name, kernel release, key,
// value or route outside its allow-list, a number not as the kernel
// writes one. The error quotes the field (escaped, cut to 60 bytes).
func CheckFields(p Plan) error {
	bad := func(field, v, what string) error {
		return badinput.Errorf("the plan's %s %s is not %s", field, sysctl.Quote(v), what)
	}
	check := func(field, v string, c charset, max int, what string) error {
		if len(v) > max || !c.allows(v) {
			return bad(field, v, fmt.Sprintf("%s of at most %d bytes", what, max))
		}
		return nil
	}
	if err := check("host", p.Host, hostChars, maxHost, "a host name (letters, digits, '-', '.', '_')"); err != nil {
		return err
	}
	if err := check("kernel", p.Kernel, kernelChars, maxKernel, "a kernel release"); err != nil {
		return err
	}
	if err := check("network namespace", p.Netns, hostChars, maxHost, "a namespace name"); err != nil {
		return err
	}
	if err := check("role", string(p.Path.Role), hostChars, 32, "a role"); err != nil {
		return err
	}
	for _, it := range p.Items {
		if it.Kind != KindSysctl {
			// Only a route's target is emitted (checked below); the other
			// kinds' texts are advice no format carries.
			if r := it.Route; r != nil {
				if err := checkRoute(*r); err != nil {
					return bad("route", r.Dst+" "+r.Gateway+" "+r.Dev, err.Error())
				}
			}
			continue
		}
		if err := check("key", it.Key, keyChars, maxKey, "a sysctl key"); err != nil {
			return err
		}
		// Checked as every format writes them, whitespace normalized, and
		// before, as apply checks a value: printable, tabs (as the kernel
		// prints them) the only other whitespace, numbers in the kernel's
		// plain decimal ("0010" is octal 8 to the kernel, "+5" not its
		// form).
		for _, v := range []string{it.New, it.Current} {
			if sysctl.CheckValue(v) != nil {
				return bad("value of "+it.Key, v, "a value as the kernel writes one (decimal, no '+' or leading 0)")
			}
		}
		if err := check("value of "+it.Key, sysctl.Normalize(it.New), valueChars, maxValue, "a sysctl value (numbers and words)"); err != nil {
			return err
		}
		if err := check("current value of "+it.Key, sysctl.Normalize(it.Current), valueChars, maxValue, "a sysctl value (numbers and words)"); err != nil {
			return err
		}
	}
	return nil
}

func checkRoute(r Route) error {
	switch {
	case r.Family != "inet" && r.Family != "inet6":
		return fmt.Errorf("of family inet or inet6")
	case r.Dst != "default" && !validPrefix(r.Dst):
		return fmt.Errorf("to a prefix or default")
	case r.Gateway != "" && !validAddr(r.Gateway):
		return fmt.Errorf("via an address")
	case len(r.Dev) > maxDev || !devChars.allows(r.Dev):
		return fmt.Errorf("on an interface name of at most %d letters, digits, '-', '.', '_', '@'", maxDev)
	case r.Table < 0 || r.InitCwnd < 0 || r.InitRwnd < 0:
		return fmt.Errorf("with a table and metrics of 0 or more")
	}
	return nil
}

func validPrefix(s string) bool {
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

func validAddr(s string) bool { _, err := netip.ParseAddr(s); return err == nil }
