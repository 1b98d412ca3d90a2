package emupath

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/linkemu"
)

// Competing traffic at or above the link's rate leaves nothing for the
// run (every packet dropped, the run ends only at its deadline): refused
// as bad input, naming the direction; below the rate it is a setting.
func TestCrossAboveRateRefused(t *testing.T) {
	const rate = 100e6
	cases := []struct {
		name   string
		cross  linkemu.Cross
		sched  Schedule
		refuse bool
	}{
		{"below", linkemu.Cross{RateBps: 30e6}, nil, false},
		{"bursts below", linkemu.Cross{RateBps: 80e6, On: 200 * time.Millisecond, Off: 800 * time.Millisecond}, nil, false},
		{"equal", linkemu.Cross{RateBps: rate}, nil, true},
		{"above", linkemu.Cross{RateBps: 150e6}, nil, true},
		{"bursts above", linkemu.Cross{RateBps: 150e6, On: 200 * time.Millisecond, Off: 800 * time.Millisecond}, nil, true},
		{"above a schedule step", linkemu.Cross{RateBps: 30e6}, Schedule{{At: 5 * time.Second, RateBps: 20e6}}, true},
		{"below every step", linkemu.Cross{RateBps: 30e6}, Schedule{{At: 5 * time.Second, RateBps: 50e6}}, false},
	}
	for _, tc := range cases {
		for _, dir := range []string{"up", "down"} {
			l := Symmetric(20*time.Millisecond, rate, 0, 0, 1)
			d := &l.Up
			if dir == "down" {
				d = &l.Down
			}
			d.Cross, d.Schedule = Cross{tc.cross}, tc.sched
			_, _, err := l.Configs()
			switch {
			case tc.refuse && (!badinput.Is(err) || !strings.HasPrefix(err.Error(), dir+": cross traffic") || !strings.Contains(err.Error(), "below")):
				t.Errorf("%s, %s: %v; want a bad-input error naming the direction and the cross traffic", tc.name, dir, err)
			case !tc.refuse && err != nil:
				t.Errorf("%s, %s: refused: %v", tc.name, dir, err)
			}
		}
	}
}
