package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const (
	durationHint = "write a duration like 200ms, 1.5s, 250us or 2m"
	rateHint     = "write a rate like 1Gbit/s, 100Mbit/s, 1Gbps or 125MB/s"
	sizeHint     = "write a size like 17kB, 64KiB, 25MB or 4096"
	percentHint  = "write a percentage like 0.1% or 1%"
)

// errorf builds the package's one-line error: the quoted input, the
// problem, and what is accepted.
func errorf(s, hint, format string, args ...any) error {
	return fmt.Errorf("%q: %s; %s", s, fmt.Sprintf(format, args...), hint)
}

// splitNumber splits s into a non-negative finite number and the unit text
// after it (spaces between the two are allowed).
func splitNumber(s, hint string) (float64, string, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, "", errorf(s, hint, "empty")
	}
	if t[0] == '-' {
		return 0, "", errorf(s, hint, "must not be negative")
	}
	i := 0
	for i < len(t) && (isDigit(t[i]) || t[i] == '.') {
		i++
	}
	if i > 0 && i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if j < len(t) && isDigit(t[j]) {
			for j < len(t) && isDigit(t[j]) {
				j++
			}
			i = j
		}
	}
	if i == 0 {
		return 0, "", errorf(s, hint, "no number")
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, "", errorf(s, hint, "number out of range")
	}
	if err != nil {
		return 0, "", errorf(s, hint, "invalid number %q", t[:i])
	}
	return v, strings.TrimLeft(t[i:], " \t"), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

var durationUnits = map[string]time.Duration{
	"ns":  time.Nanosecond,
	"us":  time.Microsecond,
	"µs":  time.Microsecond, // U+00B5 MICRO SIGN
	"μs":  time.Microsecond, // U+03BC GREEK SMALL LETTER MU
	"ms":  time.Millisecond,
	"s":   time.Second,
	"m":   time.Minute,
	"min": time.Minute,
	"h":   time.Hour,
}

// ParseDuration parses a non-negative duration with a required unit:
// "200ms", "200 ms", "0.2s", "250us", "250µs", "100ns", "2m" or "2min"
// (minutes), "1h". A bare 0 is accepted.
func ParseDuration(s string) (time.Duration, error) {
	v, unit, err := splitNumber(s, durationHint)
	if err != nil {
		return 0, err
	}
	if unit == "" {
		if v == 0 {
			return 0, nil
		}
		return 0, errorf(s, durationHint, "no unit")
	}
	mult, ok := durationUnits[unit]
	if !ok {
		return 0, errorf(s, durationHint, "unknown unit %q", unit)
	}
	ns := math.Round(v * float64(mult))
	if ns >= 1<<63 {
		return 0, errorf(s, durationHint, "too long")
	}
	return time.Duration(ns), nil
}

// siPrefixes are case-sensitive prefixes for b/s, bps, B/s and Bps.
var siPrefixes = map[string]float64{
	"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
}

// foldedPrefixes are matched after lowercasing, for units that spell out
// "bit" (tc writes mbit and gbit).
var foldedPrefixes = map[string]float64{
	"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40,
}

var rateBases = []struct {
	suffix string
	bits   float64 // bits per unit
	fold   bool    // prefix is case-insensitive
}{
	{"bits/s", 1, true},
	{"bit/s", 1, true},
	{"bits", 1, true},
	{"bit", 1, true},
	// A lowercase b is a bit whatever the prefix's case: "1gbps" and
	// "100mb/s" are how people write link speeds. (tc reads "mbps" as
	// bytes, but nothing here is handed to tc as text; a rate is printed
	// back in bit/s.) Bps and B/s, capital B, are bytes.
	{"bps", 1, true},
	{"b/s", 1, true},
	{"Bps", 8, false},
	{"B/s", 8, false},
}

// ParseRate parses a non-negative rate and returns bits per second.
// Bits: "1Gbit/s", "1 Gbit/s", "100Mbps", "1gbps", "1Gb/s", "10kbit/s",
// "1000bps", tc-style "100mbit", "1gbit". Bytes: "10MB/s", "10MBps", "10MiB/s",
// "1kB/s". A bare 0 is accepted.
func ParseRate(s string) (float64, error) {
	v, unit, err := splitNumber(s, rateHint)
	if err != nil {
		return 0, err
	}
	if unit == "" {
		if v == 0 {
			return 0, nil
		}
		return 0, errorf(s, rateHint, "no unit")
	}
	for _, b := range rateBases {
		p, ok := strings.CutSuffix(unit, b.suffix)
		if !ok {
			continue
		}
		table := siPrefixes
		if b.fold {
			p, table = strings.ToLower(p), foldedPrefixes
		}
		if m, ok := table[p]; ok {
			r := v * m * b.bits
			if math.IsInf(r, 0) {
				return 0, errorf(s, rateHint, "number out of range")
			}
			return r, nil
		}
	}
	if isAmbiguous(unit, "", "b", "bps", "b/s") {
		return 0, errorf(s, rateHint, "ambiguous unit %q", unit)
	}
	return 0, errorf(s, rateHint, "unknown unit %q", unit)
}

// isAmbiguous reports whether unit, stripped of a (case-insensitive)
// prefix, is one of bases: things like "Gb", "MBPS" or "G" that could mean
// bits or bytes.
func isAmbiguous(unit string, bases ...string) bool {
	u := strings.TrimLeft(strings.ToLower(unit), "kmgt")
	if len(u) < len(unit) {
		u = strings.TrimPrefix(u, "i")
	}
	for _, b := range bases {
		if u == b {
			return true
		}
	}
	return false
}

var sizeUnits = map[string]float64{
	"": 1, "B": 1,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	// Bare suffixes are binary, as iperf3 and sysctl users mean them.
	"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20,
	"G": 1 << 30, "g": 1 << 30, "T": 1 << 40, "t": 1 << 40,
}

// ParseSize parses a non-negative byte count: "4096", "4096B", "17kB",
// "17KB" (SI), "64KiB", "37.5MiB" (IEC), or "640K", "12M" (bare suffixes
// are binary). Fractional results are rounded to the nearest byte.
func ParseSize(s string) (int64, error) {
	v, unit, err := splitNumber(s, sizeHint)
	if err != nil {
		return 0, err
	}
	m, ok := sizeUnits[unit]
	if !ok {
		if isAmbiguous(unit, "b") {
			return 0, errorf(s, sizeHint, "ambiguous unit %q (bits or bytes?)", unit)
		}
		return 0, errorf(s, sizeHint, "unknown unit %q", unit)
	}
	n := math.Round(v * m)
	if n >= 1<<63 {
		return 0, errorf(s, sizeHint, "too large")
	}
	return int64(n), nil
}

// ParsePercent parses a percentage between 0% and 100% and returns it as a
// fraction: "0.1%" -> 0.001, "1 %" -> 0.01. The "%" is required unless the
// value is 0, so that "0.01" cannot be misread as 1% or 0.01%.
func ParsePercent(s string) (float64, error) {
	v, unit, err := splitNumber(s, percentHint)
	if err != nil {
		return 0, err
	}
	switch {
	case unit == "%":
	case unit == "" && v == 0:
		return 0, nil
	case unit == "":
		return 0, errorf(s, percentHint, "no %% sign")
	default:
		return 0, errorf(s, percentHint, "unknown unit %q", unit)
	}
	if v > 100 {
		return 0, fmt.Errorf("%q: must be between 0%% and 100%%", s)
	}
	return v / 100, nil
}
