package tcpflow

import (
	"testing"
	"time"
)

// The clock sanitizer: times since the first packet, a step back held at
// the last time, a jump of more than an hour cut out, and the tick of a
// coarse clock, from the unit dividing every time or, when most
// timestamps repeat, the least step forward.
func TestClockFix(t *testing.T) {
	const ms = int64(time.Millisecond)
	base := int64(1_700_000_000) * 1e9
	cases := []struct {
		name    string
		floor   int64
		in      []int64 // ns since base
		want    []int64
		report  ClockReport
		least   int64
		equal   int64
		minimum int64 // c.div once done
	}{
		{"forward, a step back, equal", 1000,
			[]int64{0, 1500, 1000, 1500, 4000},
			[]int64{0, 1500, 1500, 1500, 4000},
			ClockReport{Backwards: 1}, 1500, 1, 1000},
		{"a jump of two hours is cut out", 1,
			[]int64{0, 5 * ms, 5*ms + 2*int64(time.Hour), 6*ms + 2*int64(time.Hour)},
			[]int64{0, 5 * ms, 5 * ms, 6 * ms},
			ClockReport{Steps: 1}, ms, 0, ms},
		{"a 10 ms clock", 1000,
			[]int64{0, 10 * ms, 10 * ms, 30 * ms, 40 * ms, 40 * ms, 50 * ms, 70 * ms, 80 * ms, 80 * ms,
				90 * ms, 100 * ms, 100 * ms, 110 * ms, 120 * ms, 130 * ms, 130 * ms, 140 * ms, 150 * ms, 160 * ms},
			nil, ClockReport{TickSeconds: 0.01}, 10 * ms, 5, 10 * ms},
		{"repeats 1.5 ms apart", 1,
			[]int64{0, 0, 0, 1500 * 1000, 1500 * 1000, 1500 * 1000, 3 * ms, 3 * ms, 3 * ms, 4500 * 1000,
				4500 * 1000, 4500 * 1000, 6 * ms, 6 * ms, 6 * ms, 7500 * 1000, 7500 * 1000, 7500 * 1000, 9 * ms, 9 * ms},
			nil, ClockReport{TickSeconds: 0.0015}, 1500 * 1000, 13, 100 * 1000},
		{"nothing forward", 1000, []int64{0, 0, 0}, []int64{0, 0, 0}, ClockReport{}, 0, 2, 1e9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clock{floor: tc.floor}
			for i, x := range tc.in {
				got := c.fix(base + x)
				if tc.want != nil && got != tc.want[i] {
					t.Fatalf("packet %d at %d: fix %d, want %d", i, x, got, tc.want[i])
				}
			}
			if r := c.report(); r != tc.report {
				t.Errorf("report %+v, want %+v", r, tc.report)
			}
			if c.least() != tc.least || c.equal != tc.equal || c.div != tc.minimum {
				t.Errorf("least step %d, equal %d, unit %d; want %d, %d, %d", c.least(), c.equal, c.div, tc.least, tc.equal, tc.minimum)
			}
		})
	}
}
