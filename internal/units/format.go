package units

import (
	"math"
	"strconv"
	"strings"
	"time"
)

type scaledUnit struct {
	name  string
	scale float64
}

var (
	rateUnits     = []scaledUnit{{"bit/s", 1}, {"kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}, {"Tbit/s", 1e12}}
	byteRateUnits = []scaledUnit{{"B/s", 1}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}}
	siByteUnits   = []scaledUnit{{"B", 1}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}}
	iecByteUnits  = []scaledUnit{{"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}}
)

// round4 rounds x to 4 significant digits.
func round4(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return r
}

// plain formats x without exponent and without trailing zeros.
func plain(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// formatScaled picks the smallest unit in which v, rounded to 4 significant
// digits, is below base (or the largest unit).
func formatScaled(v float64, units []scaledUnit, base float64) string {
	if v == 0 {
		return "0 " + units[0].name
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return plain(v) + " " + units[0].name
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	for i, u := range units {
		if x := round4(v / u.scale); x < base || i == len(units)-1 {
			return sign + plain(x) + " " + u.name
		}
	}
	panic("unreachable")
}

// FormatRate formats bits per second with SI prefixes: "1 Gbit/s",
// "166.8 Mbit/s", "664 kbit/s", "0 bit/s".
func FormatRate(bps float64) string { return formatScaled(bps, rateUnits, 1000) }

// FormatByteRate formats bytes per second with SI prefixes: "83 kB/s",
// "21 MB/s", "1.25 GB/s".
func FormatByteRate(Bps float64) string { return formatScaled(Bps, byteRateUnits, 1000) }

// FormatBytes formats a byte count with SI prefixes: "25 MB", "37.88 MB",
// "2.92 kB", "512 B".
func FormatBytes(n float64) string { return formatScaled(n, siByteUnits, 1000) }

// FormatIEC formats a byte count with binary prefixes: "6 MiB",
// "36.12 MiB", "128 KiB", "1000 B".
func FormatIEC(n float64) string { return formatScaled(n, iecByteUnits, 1024) }

// FormatDuration formats d as "250 µs" (below 1ms), "35 ms" (below 1s),
// "7.3 s" (below 2 minutes) with 4 significant digits, or as minutes with
// at most one decimal ("2.1 min"). Zero is "0 s".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0 s"
	}
	sign, v := "", float64(d)
	if v < 0 {
		sign, v = "-", -v
	}
	for _, u := range []struct {
		name         string
		scale, limit float64
	}{{"µs", 1e3, 1000}, {"ms", 1e6, 1000}, {"s", 1e9, 120}} {
		if x := round4(v / u.scale); x < u.limit {
			return sign + plain(x) + " " + u.name
		}
	}
	return sign + strings.TrimSuffix(strconv.FormatFloat(v/6e10, 'f', 1, 64), ".0") + " min"
}

// FormatInt formats n with thousands separators: "25,000,000".
func FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
