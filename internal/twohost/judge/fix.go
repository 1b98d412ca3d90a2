package judge

import (
	"fmt"
	"strings"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// setFixes decides what to change, once, after the plans: each
// direction's fix (written over the verdict's own, which sized buffers
// for a rate and an RTT of its own: 10 Gbit/s at the flow's smoothed RTT
// when no rate was given) and the document's fix lines, which the text
// prints and the report shows as they are.
func (d *judging) setFixes() {
	for i := range d.Directions {
		d.Directions[i].Flow.Fix = d.directionFix(d.Directions[i])
	}
	d.Fix = d.fixLines()
}

// directionFix is a direction's fix: for a host's buffer, that host's
// plan item for the setting; for a path cause, the cause's; for a
// window-bound flow at the path's rate, none; otherwise the verdict's fix, which sizes nothing.
func (d *judging) directionFix(dir testdoc.Direction) string {
	l, v := dir.Limit, dir.Flow.Verdict.Verdict
	switch {
	case dir.Cause != nil && l.Setting == dir.Cause.Name:
		return strings.Join(dir.Cause.Fix, "; ")
	case l.Setting != "" && (l.Host == testdoc.HostClient || l.Host == testdoc.HostServer):
		if d.Plans == nil {
			return fmt.Sprintf("raise %s's maximum on the %s; no plan sizes it, the path's rate is %s", l.Setting, l.Host, d.PathRateBasis)
		}
		items := d.Plans.Client.Items
		if l.Host == testdoc.HostServer {
			items = d.Plans.Server.Items
		}
		for _, it := range items {
			if it.Key == l.Setting {
				return fmt.Sprintf("the %s's plan: %s", l.Host, testdoc.PlanLine(it))
			}
		}
		return fmt.Sprintf("the %s's plan leaves %s as it is (%s): for %s at %s it is enough", l.Host, l.Setting, l.Value,
			units.FormatRate(d.PathRateBps), secs(d.RTT.MinS))
	case l.Host == testdoc.HostPath && (v == diagnose.RwndLimited || v == diagnose.SndbufLimited):
		return "nothing to change on the hosts: the flow ran at the path's rate, and a larger window would only lengthen the bottleneck's queue"
	case l.Host == testdoc.HostTest:
		return "test longer (--rounds or --duration): the flow had not left slow start"
	case l.Host == testdoc.HostPath && v == diagnose.Bottleneck && dir.Cause == nil:
		return fmt.Sprintf("nothing to change on the hosts for this direction: the flow filled the path (%s)", units.FormatRate(dir.ThroughputBps))
	case dir.Cause != nil:
		return strings.Join(dir.Cause.Fix, "; ")
	}
	return dir.Flow.Fix
}

// fixLines are the lines test prints for what to change: one per
// direction, then each host's plan.
func (d *judging) fixLines() []string {
	var out []string
	for _, c := range d.Causes {
		out = append(out, fmt.Sprintf("fix for the path (%s): %s", c.Name, strings.Join(c.Fix, "; ")))
	}
	for _, dir := range d.Directions {
		out = append(out, fmt.Sprintf("fix for the %s: %s", dir.Name, dir.Flow.Fix))
	}
	if d.Plans == nil {
		return out
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	out = append(out, fmt.Sprintf("plans for %s at %s (path rate %s):", secs(d.RTT.MinS), units.FormatRate(d.PathRateBps), d.PathRateBasis))
	for _, h := range []struct {
		name  string
		items []plan.Item
	}{{testdoc.HostClient, d.Plans.Client.Items}, {testdoc.HostServer, d.Plans.Server.Items}} {
		lines := testdoc.PlanLines(h.items)
		if len(lines) == 0 {
			out = append(out, fmt.Sprintf("  %s: nothing to change", h.name))
			continue
		}
		out = append(out, fmt.Sprintf("  %s:", h.name))
		for _, l := range lines {
			out = append(out, "    "+l)
		}
	}
	return out
}

// fixLines are the lines test URL prints for what to change: this host's
// plan when its receive buffer limits, or how to get one.
func (d urlJudging) fixLines() []string {
	var out []string
	if d.Plan != nil {
		out = append(out, "this host's plan (longhaul apply client-plan.json, written with -o):")
		for _, l := range testdoc.PlanLines(d.Plan.Items) {
			out = append(out, "  "+l)
		}
	}
	if d.PlanHint != "" {
		out = append(out, "for a plan: "+d.PlanHint)
	}
	return out
}

// secs prints seconds as test's text does (testdoc.FormatSeconds).
func secs(s float64) string { return testdoc.FormatSeconds(s) }
