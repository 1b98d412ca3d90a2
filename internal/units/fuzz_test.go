package units

import (
	"math"
	"testing"
)

var fuzzSeeds = []string{
	"200ms", "1 Gbit/s", "100mbit", "10MiB/s", "64KiB", "640K", "0.1%",
	"0", "", "-1", "NaN", "Inf", "1e999", "1.2.3", "1Gb", " 2 TB ", "1e-300%",
}

func addSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
}

func checkFloat(t *testing.T, in string, v float64) {
	t.Helper()
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		t.Fatalf("parsing %q: got %v, want a non-negative finite number", in, v)
	}
}

func FuzzParseDuration(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, want non-negative", s, d)
		}
		if _, err := ParseDuration(FormatDuration(d)); err != nil {
			t.Fatalf("ParseDuration(FormatDuration(%v)): %v", d, err)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			return
		}
		checkFloat(t, s, v)
		if v < 1e-300 || v > 1e300 {
			return // keep formatted strings short; precision is checked below
		}
		out := FormatRate(v)
		got, err := ParseRate(out)
		if err != nil {
			t.Fatalf("ParseRate(FormatRate(%v) = %q): %v", v, out, err)
		}
		if !within(v, got, 5.001e-4) {
			t.Fatalf("%v -> %q -> %v: lost more than 4 significant digits", v, out, got)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, want non-negative", s, n)
		}
		_ = FormatBytes(float64(n)) + FormatIEC(float64(n)) + FormatInt(n)
	})
}

func FuzzParsePercent(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePercent(s)
		if err != nil {
			return
		}
		checkFloat(t, s, v)
		if v > 1 {
			t.Fatalf("ParsePercent(%q) = %v, want at most 1", s, v)
		}
	})
}
