package emupath

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/units"
)

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

// setKnob sets one impairment of the direction from its flag's value:
// the knobs by the name of their emulate flag without the direction
// ("--down-policer" is "policer").
func (d *Direction) setKnob(name, value string) error {
	knobs := map[string]func(string) error{
		"loss": func(v string) error {
			p := units.Percent{Max: 0.5}
			if err := p.Set(v); err != nil {
				return err
			}
			d.Loss = p.F
			return nil
		},
		"queue": d.Queue.Set, "policer": d.Policer.Set, "reorder": d.Reorder.Set,
		"middlebox": d.Middlebox.Set, "mtu": d.MTU.Set, "cross": d.Cross.Set,
	}
	set, ok := knobs[name]
	if !ok {
		return fmt.Errorf("unknown knob %q (have: %s)", name, strings.Join(slices.Sorted(maps.Keys(knobs)), ", "))
	}
	return set(value)
}
