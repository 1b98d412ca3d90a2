package emupath

import (
	"fmt"
	"strings"

	"github.com/longhaul/longhaul/internal/units"
)

// knobNames are the impairments [Link.Apply] sets, by the name of their
// emulate flag without the direction ("--down-policer" is "policer").
var knobNames = []string{"loss", "queue", "policer", "reorder", "middlebox", "mtu", "cross"}

// Apply sets impairments given as emulate flags, "down-policer=RATE/BURST"
// or "up-middlebox=wscale=strip" (the direction, the flag's name, its
// value): how a lab case records what its path does, so that the same
// path is `longhaul emulate --down-policer RATE/BURST ...`.
func (l *Link) Apply(knobs []string) error {
	for _, k := range knobs {
		name, value, ok := strings.Cut(k, "=")
		dir, knob, dirOK := strings.Cut(name, "-")
		if !ok || !dirOK {
			return fmt.Errorf("path knob %q: want up-NAME=VALUE or down-NAME=VALUE, e.g. down-policer=50Mbit/s/64KB", k)
		}
		var d *Direction
		switch dir {
		case "up":
			d = &l.Up
		case "down":
			d = &l.Down
		default:
			return fmt.Errorf("path knob %q: the direction is up or down, not %q", k, dir)
		}
		if err := d.setKnob(knob, value); err != nil {
			return fmt.Errorf("path knob %q: %w", k, err)
		}
	}
	return nil
}

// setKnob sets one impairment of the direction from its flag's value.
func (d *Direction) setKnob(name, value string) error {
	switch name {
	case "loss":
		p := units.Percent{Max: 0.5}
		if err := p.Set(value); err != nil {
			return err
		}
		d.Loss = p.F
		return nil
	case "queue":
		return d.Queue.Set(value)
	case "policer":
		return d.Policer.Set(value)
	case "reorder":
		return d.Reorder.Set(value)
	case "middlebox":
		return d.Middlebox.Set(value)
	case "mtu":
		return d.MTU.Set(value)
	case "cross":
		return d.Cross.Set(value)
	}
	return fmt.Errorf("unknown knob %q (have: %s)", name, strings.Join(knobNames, ", "))
}
