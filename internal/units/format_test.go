package units

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"rate 1G", FormatRate(1e9), "1 Gbit/s"},
		{"rate 1.25G", FormatRate(1.25e9), "1.25 Gbit/s"},
		{"rate 166.8M", FormatRate(166.8e6), "166.8 Mbit/s"},
		{"rate 965M", FormatRate(965e6), "965 Mbit/s"},
		{"rate 664k", FormatRate(83e3 * 8), "664 kbit/s"},
		{"rate zero", FormatRate(0), "0 bit/s"},
		{"rate negative zero", FormatRate(math.Copysign(0, -1)), "0 bit/s"},
		{"rate small", FormatRate(12), "12 bit/s"},
		{"rate below 1", FormatRate(0.5), "0.5 bit/s"},
		{"rate rounds to 4 digits", FormatRate(123456789), "123.5 Mbit/s"},
		{"rate rounds up a prefix", FormatRate(999.96e6), "1 Gbit/s"},
		{"rate T", FormatRate(2.5e12), "2.5 Tbit/s"},
		{"rate beyond T", FormatRate(12346e12), "12350 Tbit/s"},
		{"rate negative", FormatRate(-1e6), "-1 Mbit/s"},
		{"rate NaN", FormatRate(math.NaN()), "NaN bit/s"},
		{"byte rate k", FormatByteRate(83e3), "83 kB/s"},
		{"byte rate M", FormatByteRate(21e6), "21 MB/s"},
		{"byte rate G", FormatByteRate(1.25e9), "1.25 GB/s"},
		{"byte rate zero", FormatByteRate(0), "0 B/s"},
		{"bytes 25M", FormatBytes(25e6), "25 MB"},
		{"bytes 37.88M", FormatBytes(37878788), "37.88 MB"},
		{"bytes 2.92k", FormatBytes(2920), "2.92 kB"},
		{"bytes 512", FormatBytes(512), "512 B"},
		{"bytes 999", FormatBytes(999), "999 B"},
		{"bytes 1000", FormatBytes(1000), "1 kB"},
		{"bytes zero", FormatBytes(0), "0 B"},
		{"IEC 6M", FormatIEC(6291456), "6 MiB"},
		{"IEC 4M", FormatIEC(4194304), "4 MiB"},
		{"IEC 36.12M", FormatIEC(37878788), "36.12 MiB"},
		{"IEC 128K", FormatIEC(131072), "128 KiB"},
		{"IEC 1000", FormatIEC(1000), "1000 B"},
		{"IEC 1G", FormatIEC(1 << 30), "1 GiB"},
		{"IEC zero", FormatIEC(0), "0 B"},
		{"duration 200ms", FormatDuration(200 * time.Millisecond), "200 ms"},
		{"duration 1.5s", FormatDuration(1500 * time.Millisecond), "1.5 s"},
		{"duration 250us", FormatDuration(250 * time.Microsecond), "250 µs"},
		{"duration 7.3s", FormatDuration(7300 * time.Millisecond), "7.3 s"},
		{"duration 35ms", FormatDuration(35 * time.Millisecond), "35 ms"},
		{"duration 35.123456ms", FormatDuration(35123456), "35.12 ms"},
		{"duration 100ns", FormatDuration(100), "0.1 µs"},
		{"duration rounds up to ms", FormatDuration(999999), "1 ms"},
		{"duration 119s", FormatDuration(119 * time.Second), "119 s"},
		{"duration 2min", FormatDuration(120 * time.Second), "2 min"},
		{"duration 125s", FormatDuration(125 * time.Second), "2.1 min"},
		{"duration 90min", FormatDuration(90 * time.Minute), "90 min"},
		{"duration zero", FormatDuration(0), "0 s"},
		{"duration negative", FormatDuration(-35 * time.Millisecond), "-35 ms"},
		{"int 25M", FormatInt(25000000), "25,000,000"},
		{"int small", FormatInt(999), "999"},
		{"int 1000", FormatInt(1000), "1,000"},
		{"int zero", FormatInt(0), "0"},
		{"int negative", FormatInt(-1234567), "-1,234,567"},
		{"int min", FormatInt(math.MinInt64), "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// roundTripValues spans many decades with awkward mantissas.
func roundTripValues() []float64 {
	var vs []float64
	for v := 0.7; v < 1e15; v *= 3.7 {
		vs = append(vs, v, math.Floor(v))
	}
	return append(vs, 0, 1, 999.96, 1000, 1023.6, 1024, 999999)
}

// within reports whether got is within rel (relative) of want; formatting
// keeps 4 significant digits, so rel 5e-4 plus float noise is the bound.
func within(want, got, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)+1e-9
}

func TestRoundTrip(t *testing.T) {
	const rel = 5.001e-4
	for _, v := range roundTripValues() {
		for _, c := range []struct {
			name   string
			format func(float64) string
			parse  func(string) (float64, error)
			slack  float64 // absolute, for rounding to whole bytes
		}{
			{"rate", FormatRate, ParseRate, 0},
			{"byte rate", FormatByteRate, func(s string) (float64, error) { r, err := ParseRate(s); return r / 8, err }, 0},
			{"bytes", FormatBytes, parseSizeFloat, 0.5},
			{"IEC", FormatIEC, parseSizeFloat, 0.5},
		} {
			s := c.format(v)
			got, err := c.parse(s)
			if err != nil {
				t.Errorf("%s: parsing %q (formatted from %v): %v", c.name, s, v, err)
				continue
			}
			if !within(v, got, rel) && math.Abs(got-v) > c.slack {
				t.Errorf("%s: %v -> %q -> %v, want within %v", c.name, v, s, got, rel)
			}
		}
	}
}

func parseSizeFloat(s string) (float64, error) {
	n, err := ParseSize(s)
	return float64(n), err
}

func TestDurationRoundTrip(t *testing.T) {
	for d := time.Duration(1); d < 100*time.Hour; d = d*37/10 + 1 {
		s := FormatDuration(d)
		got, err := ParseDuration(s)
		if err != nil {
			t.Errorf("%v -> %q: %v", d, s, err)
			continue
		}
		// 4 significant digits, or 0.05 min for minutes.
		tol := max(float64(d)*5.001e-4, 0.5)
		if d >= 2*time.Minute {
			tol = float64(3 * time.Second)
		}
		if math.Abs(float64(got-d)) > tol {
			t.Errorf("%v -> %q -> %v, want within %v", d, s, got, time.Duration(tol))
		}
	}
}
