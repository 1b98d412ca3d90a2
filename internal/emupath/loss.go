package emupath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/units"
)

// Burst is loss in bursts (the Gilbert-Elliott model of linkemu) given as
// a mean loss and a mean burst length. It is a pflag.Value: "1%/8" loses
// 1% of segments, 8 in a row on average.
type Burst struct {
	Mean   float64 // fraction of segments lost
	Length float64 // mean segments per burst, >= 1
}

// Set parses MEAN/BURST.
func (b *Burst) Set(s string) error {
	mean, burst, ok := strings.Cut(s, "/")
	m, err := units.ParsePercent(mean)
	if err != nil || !ok {
		return fmt.Errorf("%q: want MEAN/BURST, e.g. 1%%/8 (1%% of segments, in bursts of 8 on average)", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(burst), 64)
	if err != nil {
		return fmt.Errorf("%q: burst length %q: want a number of segments, e.g. 8", s, burst)
	}
	if _, err := linkemu.BurstLoss(m, n); err != nil {
		return err
	}
	*b = Burst{Mean: m, Length: n}
	return nil
}

func (b *Burst) String() string {
	if b.Mean == 0 {
		return ""
	}
	return strconv.FormatFloat(b.Mean*100, 'f', -1, 64) + "%/" + strconv.FormatFloat(b.Length, 'f', -1, 64)
}

// Type names the value in help text.
func (b *Burst) Type() string { return "mean/burst" }

// Outages are intervals in which a direction drops everything. It is a
// pflag.Value: "1s@5s,500ms@12s" (DURATION@START after the start).
type Outages []linkemu.Outage

// Set parses a comma-separated list.
func (o *Outages) Set(s string) error {
	out, err := linkemu.ParseOutages(s)
	if err != nil {
		return err
	}
	*o = out
	return nil
}

func (o *Outages) String() string {
	parts := make([]string, len(*o))
	for i, x := range *o {
		parts[i] = x.String()
	}
	return strings.Join(parts, ",")
}

// Type names the value in help text.
func (o *Outages) Type() string { return "outages" }

// lossModel is the direction's loss: bursts or independent losses (not
// both: Link.Configs refuses that), or none.
func (d Direction) lossModel() (linkemu.LossModel, error) {
	switch {
	case d.Burst.Mean > 0 && d.Loss > 0:
		return nil, inputf("give either a random loss or a burst loss for a direction, not both")
	case d.Burst.Mean > 0:
		return linkemu.BurstLoss(d.Burst.Mean, d.Burst.Length)
	case d.Loss > 0:
		return linkemu.Bernoulli{P: d.Loss}, nil
	}
	return nil, nil
}
