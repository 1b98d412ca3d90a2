package units

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// approx compares floats to 1e-12 relative, enough to absorb the rounding
// of decimal inputs like 0.1%.
var approx = cmpopts.EquateApprox(1e-12, 0)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"ms", "200ms", 200 * time.Millisecond},
		{"ms with space", "200 ms", 200 * time.Millisecond},
		{"fractional seconds", "0.2s", 200 * time.Millisecond},
		{"seconds", "1.5s", 1500 * time.Millisecond},
		{"us", "250us", 250 * time.Microsecond},
		{"micro sign", "250µs", 250 * time.Microsecond},
		{"greek mu", "250μs", 250 * time.Microsecond},
		{"micro sign with space", "250 µs", 250 * time.Microsecond},
		{"ns", "100ns", 100 * time.Nanosecond},
		{"m is minutes", "2m", 2 * time.Minute},
		{"min", "2.5 min", 150 * time.Second},
		{"hours", "1h", time.Hour},
		{"leading dot", ".5s", 500 * time.Millisecond},
		{"exponent", "1e3ms", time.Second},
		{"surrounding space", "  35ms ", 35 * time.Millisecond},
		{"zero with unit", "0s", 0},
		{"bare zero", "0", 0},
		{"rounds to nearest ns", "1.6ns", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if err != nil {
				t.Fatalf("ParseDuration(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseDuration(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		name, in, wantSub string
	}{
		{"no unit", "200", "no unit"},
		{"empty", "", "empty"},
		{"blank", "   ", "empty"},
		{"negative", "-5ms", "negative"},
		{"NaN", "NaN", "no number"},
		{"Inf", "Infs", "no number"},
		{"overflow exponent", "1e999s", "out of range"},
		{"too long", "1e10h", "too long"},
		{"unknown unit", "5 parsecs", `unknown unit "parsecs"`},
		{"composite", "1m30s", `unknown unit "m30s"`},
		{"two dots", "1.2.3s", `invalid number "1.2.3"`},
		{"plus sign", "+5ms", "no number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDuration(tt.in)
			checkErr(t, err, tt.in, tt.wantSub, "like 200ms")
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
	}{
		{"Gbit/s", "1Gbit/s", 1e9},
		{"Gbit/s with space", "1 Gbit/s", 1e9},
		{"Mbit/s", "100Mbit/s", 100e6},
		{"Mbps", "100Mbps", 100e6},
		{"Gb/s", "1Gb/s", 1e9},
		{"kbit/s", "10kbit/s", 10e3},
		{"Kbit/s", "10Kbit/s", 10e3},
		{"kbps", "10kbps", 10e3},
		{"gbps", "1gbps", 1e9},
		{"mbps", "100mbps", 100e6},
		{"Kbps", "10Kbps", 10e3},
		{"GBps bytes", "1GBps", 8e9},
		{"mb/s", "100mb/s", 100e6},
		{"gb/s", "1gb/s", 1e9},
		{"bit/s", "1000bit/s", 1000},
		{"bps", "1000bps", 1000},
		{"b/s", "1000b/s", 1000},
		{"bits/s", "2 Mbits/s", 2e6},
		{"Tbit/s", "1.5Tbit/s", 1.5e12},
		{"tc mbit", "100mbit", 100e6},
		{"tc gbit", "1gbit", 1e9},
		{"tc kbit", "64kbit", 64e3},
		{"tc Gbit", "1Gbit", 1e9},
		{"tc bit", "500bit", 500},
		{"tc mibit", "1mibit", 1 << 20},
		{"binary bits", "1Mibit/s", 1 << 20},
		{"MB/s", "10MB/s", 80e6},
		{"MBps", "10MBps", 80e6},
		{"MiB/s", "10MiB/s", 10 * 8 << 20},
		{"GiB/s", "1GiB/s", 8 << 30},
		{"KB/s", "1KB/s", 8e3},
		{"kB/s", "1kB/s", 8e3},
		{"B/s", "125 B/s", 1000},
		{"fraction", "166.8Mbit/s", 166.8e6},
		{"zero with unit", "0bit/s", 0},
		{"bare zero", "0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if err != nil {
				t.Fatalf("ParseRate(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("ParseRate(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseRateErrors(t *testing.T) {
	tests := []struct {
		name, in, wantSub string
	}{
		{"Gb", "1Gb", `"1Gb": ambiguous unit "Gb"; write a rate like 1Gbit/s, 100Mbit/s, 1Gbps or 125MB/s`},
		{"GB", "1GB", `ambiguous unit "GB"`},
		{"bare prefix", "1G", `ambiguous unit "G"`},
		{"MiB", "1MiB", `ambiguous unit "MiB"`},
		{"upper case bps", "1GBPS", `ambiguous unit "GBPS"`},
		{"upper case b/s", "1GB/S", `ambiguous unit "GB/S"`},
		{"milli B/s", "1mBps", `ambiguous unit "mBps"`},
		{"no unit", "200", `"200": no unit; write a rate like`},
		{"empty", "", "empty"},
		{"negative", "-1Gbit/s", "negative"},
		{"NaN", "NaN", "no number"},
		{"Inf", "Inf bit/s", "no number"},
		{"overflow", "1e999bit/s", "out of range"},
		{"overflow after prefix", "1e300Tbit/s", "out of range"},
		{"unknown", "1 furlong/s", `unknown unit "furlong/s"`},
		{"duration", "5ms", `unknown unit "ms"`},
		{"per minute", "1Gbit/min", `unknown unit "Gbit/min"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRate(tt.in)
			checkErr(t, err, tt.in, tt.wantSub, "like 1Gbit/s")
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
	}{
		{"kB", "17kB", 17000},
		{"KB", "17KB", 17000},
		{"KiB", "64KiB", 65536},
		{"MB", "25MB", 25e6},
		{"fractional MiB", "37.5MiB", 39321600},
		{"GB", "1GB", 1e9},
		{"GiB", "1GiB", 1 << 30},
		{"TB", "2TB", 2e12},
		{"TiB", "1TiB", 1 << 40},
		{"bare K is binary", "640K", 655360},
		{"bare k is binary", "640k", 655360},
		{"bare M is binary", "12M", 12582912},
		{"bare G is binary", "1G", 1 << 30},
		{"Ki", "4Ki", 4096},
		{"plain integer", "4096", 4096},
		{"B suffix", "4096B", 4096},
		{"space", "25 MB", 25e6},
		{"rounds half up", "0.5", 1},
		{"rounds down", "1.4B", 1},
		{"zero", "0", 0},
		{"largest", "9223372036854774784", 9223372036854774784},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if err != nil {
				t.Fatalf("ParseSize(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSize(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		name, in, wantSub string
	}{
		{"Gb", "1Gb", `"1Gb": ambiguous unit "Gb" (bits or bytes?); write a size like 17kB, 64KiB, 25MB or 4096`},
		{"kb", "1kb", `ambiguous unit "kb"`},
		{"mb", "1mb", `ambiguous unit "mb"`},
		{"gb", "1gb", `ambiguous unit "gb"`},
		{"Mb", "1Mb", `ambiguous unit "Mb"`},
		{"bare b", "8b", `ambiguous unit "b"`},
		{"unknown", "1 parsec", `unknown unit "parsec"`},
		{"rate", "1MB/s", `unknown unit "MB/s"`},
		{"empty", "", "empty"},
		{"negative", "-1", "negative"},
		{"NaN", "NaN", "no number"},
		{"too large", "9223372036854775808", "too large"},
		{"too large with unit", "10000000TB", "too large"},
		{"overflow", "1e999", "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSize(tt.in)
			checkErr(t, err, tt.in, tt.wantSub, "like 17kB")
		})
	}
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
	}{
		{"tenth", "0.1%", 0.001},
		{"one", "1%", 0.01},
		{"space", "2.5 %", 0.025},
		{"hundred", "100%", 1},
		{"zero percent", "0%", 0},
		{"bare zero", "0", 0},
		{"bare zero decimal", "0.0", 0},
		{"tiny", "1e-4%", 1e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePercent(tt.in)
			if err != nil {
				t.Fatalf("ParsePercent(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("ParsePercent(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParsePercentErrors(t *testing.T) {
	tests := []struct {
		name, in, wantSub, wantHint string
	}{
		{"over 100", "150%", `"150%": must be between 0% and 100%`, "between 0% and 100%"},
		{"bare fraction", "0.001", `"0.001": no % sign; write a percentage like 0.1% or 1%`, "like 0.1%"},
		{"bare one", "1", "no % sign", "like 0.1%"},
		{"negative", "-1%", "negative", "like 0.1%"},
		{"unknown", "1 percent", `unknown unit "percent"`, "like 0.1%"},
		{"empty", "", "empty", "like 0.1%"},
		{"NaN", "NaN%", "no number", "like 0.1%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePercent(tt.in)
			checkErr(t, err, tt.in, tt.wantSub, tt.wantHint)
		})
	}
}

// checkErr asserts err is a one-line error quoting in, containing wantSub
// and the hint of what is accepted.
func checkErr(t *testing.T, err error, in, wantSub, wantHint string) {
	t.Helper()
	if err == nil {
		t.Fatalf("parsing %q: got nil error, want one containing %q", in, wantSub)
	}
	msg := err.Error()
	for _, want := range []string{wantSub, wantHint} {
		if !strings.Contains(msg, want) {
			t.Errorf("parsing %q: error %q does not contain %q", in, msg, want)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "failed") {
		t.Errorf("parsing %q: error %q should be one line without \"failed\"", in, msg)
	}
	if quoted := strings.ReplaceAll(in, `"`, `\"`); !strings.HasPrefix(msg, `"`+quoted+`"`) {
		t.Errorf("parsing %q: error %q does not start with the quoted input", in, msg)
	}
}
