package linkemu

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// Outage is an interval during which the link drops everything: a link
// flap, a dead peer's path, a middlebox losing its state. Start is on the
// link's clock (the now given to Enqueue: time since the emulator
// started).
type Outage struct {
	Start, Duration time.Duration
}

func (o Outage) String() string {
	return units.FormatDuration(o.Duration) + "@" + units.FormatDuration(o.Start)
}

// ParseOutages reads a comma-separated list of DURATION@START (e.g.
// "1s@5s,500ms@12s").
func ParseOutages(s string) ([]Outage, error) {
	var out []Outage
	for _, part := range strings.Split(s, ",") {
		d, at, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("outage %q: want DURATION@START, e.g. 1s@5s (drop everything for 1 s from 5 s after the start)", part)
		}
		dur, err := units.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("outage %q: duration: %w", part, err)
		}
		start, err := units.ParseDuration(at)
		if err != nil {
			return nil, fmt.Errorf("outage %q: start: %w", part, err)
		}
		out = append(out, Outage{Start: start, Duration: dur})
	}
	return out, validOutages(out)
}

func validOutages(os []Outage) error {
	for _, o := range os {
		if o.Start < 0 || o.Duration <= 0 {
			return fmt.Errorf("outage %v: the start must not be negative and the duration must be positive", o)
		}
	}
	return nil
}

// inOutage reports whether now falls in one of the link's outages.
func (l *Link) inOutage(now time.Duration) bool {
	for _, o := range l.cfg.Outages {
		if now >= o.Start && now < o.Start+o.Duration {
			return true
		}
	}
	return false
}

// BurstLoss is the Gilbert-Elliott model set from what a user knows: the
// mean loss rate and the mean length of a burst of losses (segments).
// Every segment is lost in the bad state and none in the good one.
func BurstLoss(mean, burst float64) (GilbertElliott, error) {
	if mean <= 0 || mean >= 1 || burst < 1 {
		return GilbertElliott{}, fmt.Errorf("burst loss: the mean loss must be between 0 and 100%% and the burst at least 1 segment (got %g, %g)", mean, burst)
	}
	r := 1 / burst
	p := mean * r / (1 - mean)
	if p > 1 {
		return GilbertElliott{}, fmt.Errorf("burst loss: a mean of %g with bursts of %g segments is impossible: lower the mean or lengthen the bursts", mean, burst)
	}
	return GilbertElliott{PGoodToBad: p, PBadToGood: r, LossGood: 0, LossBad: 1}, nil
}
