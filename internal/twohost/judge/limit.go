package judge

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// ends returns a direction's sender and receiver.
func ends(name string) (sender, receiver string) {
	if name == wire.PhaseUpload {
		return testdoc.HostClient, testdoc.HostServer
	}
	return testdoc.HostServer, testdoc.HostClient
}

func (d *judging) snap(host string) *snapshot.Snapshot {
	if host == testdoc.HostServer {
		return d.Hosts.Server
	}
	return d.Hosts.Client
}

// direction judges one direction: the verdict of the sender's socket,
// the host and setting that limited it, and the model beside it.
// The path's cause and the verdict are j's (diagnose.PathCause).
func (d *judging) direction(name string, f flows.Flow, rtt time.Duration, j diagnose.Judgement) (testdoc.Direction, error) {
	sender, receiver := ends(name)
	if j.Verdict.Verdict != "" {
		f.Verdict = j.Verdict
	}
	dir := testdoc.Direction{Name: name, Sender: sender, Receiver: receiver, ThroughputBps: f.ThroughputBps, RTTS: f.RTT, Flow: f, Cause: j.Cause, Seen: j.Seen}
	m, err := model(d.snap(receiver), d.snap(sender), rtt, d.PathRateBps)
	if err != nil {
		return dir, fmt.Errorf("model of the %s: %w", name, err)
	}
	dir.Model = m
	dir.Flow.Verdict = diagnose.SndbufHidden(dir.Flow.Verdict, sndbufModel(dir))
	if m.ExpectedBps > 0 {
		dir.Model.MeasuredVsModel = f.ThroughputBps / m.ExpectedBps
	}
	dir.Limit = d.limitOf(dir, rtt)
	if l, ok := shortPath(dir, rtt); ok && l == dir.Limit {
		// The verdict's own fix would size a buffer that limits nothing.
		dir.Flow.Fix = "nothing to tune on the hosts: on a path this short no buffer or window holds the flow back; the CPUs and the applications set its rate"
	}
	dir.Headline = d.headline(dir)
	return dir, nil
}

// model is the path model with the receiver's receive settings and the
// sender's send settings.
func model(recv, send *snapshot.Snapshot, rtt time.Duration, rate float64) (testdoc.Model, error) {
	if recv == nil || send == nil || rtt <= 0 {
		return testdoc.Model{Note: "no model: a snapshot or the RTT is missing"}, nil
	}
	in := recv.ModelInput()
	sin := send.ModelInput()
	in.Wmem, in.CoreWmemMax = sin.Wmem, sin.CoreWmemMax
	in.InitCwnd, in.InitRwnd = 0, 0
	in.TCPMemPages, in.RAMBytes = [3]int64{}, 0
	in.RTT, in.RateBps = rtt, rate
	if rate <= 0 {
		in.RateBps = unknownRate
	}
	r, err := pathmodel.Compute(in)
	if err != nil {
		return testdoc.Model{}, err
	}
	m := testdoc.Model{ExpectedBps: r.ExpectedBps, LimitedBy: r.LimitedBy,
		ReceiverWindowBytes: r.Receiver.WindowBytes, SenderInFlightBytes: r.Sender.WindowBytes,
		ReceiverCeilingBps: r.Receiver.CeilingBps, SenderCeilingBps: r.Sender.CeilingBps,
		ReceiverSettings: "net.ipv4.tcp_rmem " + recv.Sysctls["net.ipv4.tcp_rmem"],
		SenderSettings:   "net.ipv4.tcp_wmem " + send.Sysctls["net.ipv4.tcp_wmem"]}
	switch {
	case r.LimitedBy == "path" && rate <= 0:
		m.ExpectedBps, m.Note = 0, "both hosts' buffers allow more than the rates measured; the path's rate is unknown"
	case r.LimitedBy == "path":
		m.Note = fmt.Sprintf("buffers cover the BDP (%s): the path's %s is the limit", units.FormatIEC(float64(r.BDPBytes)), units.FormatRate(rate))
	default:
		m.Note = fmt.Sprintf("the %s's buffer allows %s at %s", r.LimitedBy, units.FormatRate(r.ExpectedBps), units.FormatDuration(rtt.Round(100*time.Microsecond)))
	}
	return m, nil
}

// limitOf names the host and the setting behind the verdict.
func (d *judging) limitOf(dir testdoc.Direction, rtt time.Duration) testdoc.Limit {
	at := units.FormatDuration(rtt.Round(100 * time.Microsecond))
	v := dir.Flow.Verdict
	if l, ok := d.atPathRate(dir); ok {
		return l
	}
	if c := dir.Cause; c != nil && c.Name == diagnose.CauseCPUBound {
		end := dir.Sender
		if c.Numbers["receiver"] == 1 {
			end = dir.Receiver
		}
		return testdoc.Limit{Host: end, Setting: c.Name, Text: "the " + end + "'s CPU: " + c.Text}
	}
	if c := dir.Cause; c != nil {
		return testdoc.Limit{Host: testdoc.HostPath, Setting: c.Name, Text: "the path: " + c.Text}
	}
	if l, ok := shortPath(dir, rtt); ok {
		return l
	}
	switch v.Verdict {
	case diagnose.SndbufLimited:
		val := d.snap(dir.Sender).Sysctls["net.ipv4.tcp_wmem"]
		return testdoc.Limit{Host: dir.Sender, Setting: "net.ipv4.tcp_wmem", Value: val,
			Text: fmt.Sprintf("the %s's send buffer: net.ipv4.tcp_wmem max %s holds %s in flight: %s at %s",
				dir.Sender, maxIEC(val), units.FormatBytes(dir.Model.SenderInFlightBytes), units.FormatRate(dir.Model.SenderCeilingBps), at)}
	case diagnose.RwndLimited, diagnose.ZeroWindow:
		if l, ok := d.scalingOff(dir, rtt); ok {
			return l
		}
		val := d.snap(dir.Receiver).Sysctls["net.ipv4.tcp_rmem"]
		return testdoc.Limit{Host: dir.Receiver, Setting: "net.ipv4.tcp_rmem", Value: val,
			Text: fmt.Sprintf("the %s's receive buffer: net.ipv4.tcp_rmem max %s allows a %s window: %s at %s",
				dir.Receiver, maxIEC(val), units.FormatBytes(dir.Model.ReceiverWindowBytes), units.FormatRate(dir.Model.ReceiverCeilingBps), at)}
	case diagnose.Bottleneck:
		return testdoc.Limit{Host: testdoc.HostPath, Text: "the path: the congestion window filled the bottleneck (" + strings.TrimSuffix(v.Summary, ".") + ")"}
	case diagnose.LossLimited:
		if diagnose.AtPathRate(dir.ThroughputBps, d.PathRateBps) {
			// Losses at the path's rate are its queue overflowing (see
			// diagnose's atPathRate), not loss holding the flow down.
			return testdoc.Limit{Host: testdoc.HostPath, Text: fmt.Sprintf("the path: the flow ran at %s, the path's rate (%s); its losses were the bottleneck's queue overflowing as it filled the path",
				units.FormatRate(dir.ThroughputBps), units.FormatRate(d.PathRateBps))}
		}
		return testdoc.Limit{Host: testdoc.HostPath, Text: "the path: packet loss holds the congestion window down (" + strings.TrimSuffix(v.Summary, ".") + ")"}
	case diagnose.SlowStart:
		return testdoc.Limit{Host: testdoc.HostTest, Text: "the test: " + strings.TrimSuffix(v.Summary, ".") + "; run longer (--rounds, a longer --duration)"}
	case diagnose.AppLimited:
		return testdoc.Limit{Host: dir.Sender, Text: fmt.Sprintf("the %s's sending application: it had nothing to send most of the time (a rate cap, or CPU)", dir.Sender)}
	}
	return testdoc.Limit{Host: "unknown", Text: "unknown: " + v.Summary}
}

// scalingOff: an unscaled window held the flow and a host has window
// scaling off: that host's setting is the limit (its plan turns it on).
func (d *judging) scalingOff(dir testdoc.Direction, rtt time.Duration) (testdoc.Limit, bool) {
	if !unscaled(dir.Flow) || rtt <= 0 {
		return testdoc.Limit{}, false
	}
	for _, h := range []string{dir.Receiver, dir.Sender} {
		if windowScaling(d.snap(h)) == 0 {
			ceiling := pathmodel.WindowCeiling(pathmodel.MaxUnscaledWindow, rtt)
			return testdoc.Limit{Host: h, Setting: "net.ipv4.tcp_window_scaling", Value: "0",
				Text: fmt.Sprintf("the %s's net.ipv4.tcp_window_scaling is 0: no window on the connection can exceed 64 KB, %s at %s, whatever the buffers",
					h, units.FormatRate(ceiling), units.FormatDuration(rtt.Round(100*time.Microsecond)))}, true
		}
	}
	return testdoc.Limit{}, false
}

// atPathRate: a window-bound flow that runs at the path's rate is
// limited by the path. With a drop-tail queue at the bottleneck the
// congestion window grows past the BDP until the peer's window (or the
// send buffer) stops it, so the kernel counts rwnd- or sndbuf-limited
// time although a larger window would only lengthen the queue (measured:
// 941 Mbit/s at 200 ms, 73% rwnd-limited with a 28.5 MB window over a
// 25 MB BDP).
//
// Nor is it when the most the setting allows carries the path's rate (a
// rate measured, not a lower bound): raising it cannot help. A flow
// that ran below the path's rate then was held by the path's queue and
// losses, or by a window autotuning was still growing (measured: bbr at
// 170 ms x 1 Gbit/s with 64 MiB of tcp_rmem, 760-810 Mbit/s, 57% of the
// time "rwnd-limited" at a 24-44 MB window whose 64 MiB maximum allows
// 2.1 Gbit/s).
func (d *judging) atPathRate(dir testdoc.Direction) (testdoc.Limit, bool) {
	v := dir.Flow.Verdict.Verdict
	if (v != diagnose.RwndLimited && v != diagnose.SndbufLimited) || d.PathRateBps <= 0 {
		return testdoc.Limit{}, false
	}
	who, win, ceiling := dir.Receiver+"'s receive window", dir.Model.ReceiverWindowBytes, dir.Model.ReceiverCeilingBps
	if v == diagnose.SndbufLimited {
		who, win, ceiling = dir.Sender+"'s send buffer", dir.Model.SenderInFlightBytes, dir.Model.SenderCeilingBps
	}
	if diagnose.AtPathRate(dir.ThroughputBps, d.PathRateBps) {
		return testdoc.Limit{Host: testdoc.HostPath, Text: fmt.Sprintf("the path: the flow ran at %s, the path's rate (%s); the %s (%s) is above the BDP and only stops the bottleneck queue from growing",
			units.FormatRate(dir.ThroughputBps), units.FormatRate(d.PathRateBps), who, units.FormatBytes(win))}, true
	}
	if v == diagnose.RwndLimited && dir.Flow.Verdict.CeilingBps > 0 {
		// The window seen, not only the most the setting allows: a
		// middlebox that strips window scaling, or an application's
		// fixed SO_RCVBUF, holds it under that.
		ceiling = min(ceiling, dir.Flow.Verdict.CeilingBps)
	}
	if dir.Cause != nil || unscaled(dir.Flow) || d.rateFromRamp || strings.Contains(d.PathRateBasis, "at least") || ceiling < d.PathRateBps {
		return testdoc.Limit{}, false
	}
	return testdoc.Limit{Host: testdoc.HostPath, Text: fmt.Sprintf("the path: the flow ran at %s, under the path's %s, while the %s (%s at its largest, %s at this RTT as seen) carries the path's rate: the path's queue and losses held the flow; raising the setting would not help",
		units.FormatRate(dir.ThroughputBps), units.FormatRate(d.PathRateBps), who, units.FormatBytes(win), units.FormatRate(ceiling))}, true
}

// ShortRTT is the round trip under which a path needs no tuning: its BDP
// at any rate a host sends (27 Gbit/s x 1 ms = 3.4 MB) is within the
// default buffers' reach, and a flow leaves slow start in a few
// milliseconds, so the hosts themselves (CPU, the applications) set the
// rate.
const ShortRTT = time.Millisecond

// shortPath names the hosts, not the path or the test, when the round
// trip is under ShortRTT and no buffer was the limit: on loopback or a
// LAN a flow that read as in slow start, application-bound,
// congestion-window-bound, or held by a buffer whose flight per round
// trip is far above the rate, ran at what the hosts' CPUs and the
// applications give (measured on loopback: 16.9 Gbit/s, "slow start";
// 18.9 Gbit/s with 2.4 MB in flight, "sndbuf-limited ... 24.42 Tbit/s").
func shortPath(dir testdoc.Direction, rtt time.Duration) (testdoc.Limit, bool) {
	if rtt <= 0 || rtt >= ShortRTT {
		return testdoc.Limit{}, false
	}
	switch f := dir.Flow; f.Verdict.Verdict {
	case diagnose.SlowStart, diagnose.AppLimited, diagnose.Bottleneck, diagnose.Unknown:
	case diagnose.RwndLimited, diagnose.SndbufLimited:
		// A buffer limits a sub-millisecond path only if it is tiny: its
		// flight per round trip must be near the rate measured.
		if float64(f.InflightBytes)*8/rtt.Seconds() < 2*f.ThroughputBps {
			return testdoc.Limit{}, false
		}
	default:
		return testdoc.Limit{}, false
	}
	return testdoc.Limit{Host: dir.Sender, Text: fmt.Sprintf("the hosts: at a round trip of %s (under %s) no buffer or window limits the flow and there is nothing to tune; "+
		"the %s's and the %s's CPU and applications set the rate (%s)",
		units.FormatDuration(rtt.Round(time.Microsecond)), units.FormatDuration(ShortRTT), dir.Sender, dir.Receiver, units.FormatRate(dir.ThroughputBps))}, true
}

// maxIEC prints the maximum of a "min default max" triple.
func maxIEC(triple string) string {
	f := strings.Fields(triple)
	if len(f) != 3 {
		return "?"
	}
	var n int64
	if _, err := fmt.Sscan(f[2], &n); err != nil {
		return f[2]
	}
	return units.FormatIEC(float64(n))
}

func (d *judging) headline(dir testdoc.Direction) string {
	h := fmt.Sprintf("%s: %s, limited by %s", dir.Name, units.FormatRate(dir.ThroughputBps), dir.Limit.Text)
	if dir.Model.ExpectedBps > 0 {
		h += fmt.Sprintf("; model %s (%s)", units.FormatRate(dir.Model.ExpectedBps), dir.Model.Note)
	}
	if c := d.Capacity; c != nil {
		more := ""
		if c.AtLeast {
			more = " at least"
		}
		h += fmt.Sprintf("; the path carried%s %s with %d streams", more, units.FormatRate(c.Bps), c.Streams)
	}
	return h
}

// makePlans makes a plan per host for the path's RTT and rate, and the
// model's prediction for each direction with both plans applied.
func (d *judging) makePlans(rtt time.Duration, judged map[string][]flows.Flow) error {
	defer d.setFixes() // with or without plans, the fixes are decided from them
	if rtt > 0 && rtt < ShortRTT {
		d.Notes = append(d.Notes, fmt.Sprintf("no plans: the round trip (%s) is under %s, too short a path to need tuning",
			units.FormatDuration(rtt.Round(time.Microsecond)), units.FormatDuration(ShortRTT)))
		return nil
	}
	if d.PathRateBps <= 0 || rtt <= 0 || d.Hosts.Client == nil || d.Hosts.Server == nil {
		d.Notes = append(d.Notes, "no plans: the path's rate is "+d.PathRateBasis)
		return nil
	}
	if d.rateFromRamp {
		d.Notes = append(d.Notes, fmt.Sprintf("no plans: the phases ended while the flows were still speeding up (slow start), so the path carries more than the %s measured; "+
			"buffers sized from it would be too small: test longer (--rounds), or give --rate", units.FormatRate(d.PathRateBps)))
		return nil
	}
	down, up := len(judged[wire.PhaseDownload]) > 0 || len(judged[wire.PhaseCapacity]) > 0, len(judged[wire.PhaseUpload]) > 0
	roles := func(sends, receives bool) plan.Role {
		switch {
		case sends && receives:
			return plan.Both
		case sends:
			return plan.Server
		}
		return plan.Client
	}
	var ps testdoc.Plans
	var err error
	req := plan.Request{RTT: rtt, RateBps: d.PathRateBps, Flows: 1}
	req.Role = roles(up, down)
	if ps.Client, err = plan.Make(d.Hosts.Client, req); err != nil {
		return fmt.Errorf("client plan: %w", err)
	}
	req.Role = roles(down, up)
	req.MTUProbing = d.blackHole() // found on the path from the server
	if ps.Server, err = plan.Make(d.Hosts.Server, req); err != nil {
		return fmt.Errorf("server plan: %w", err)
	}
	d.Plans = &ps
	after := testdoc.Hosts{Client: applied(d.Hosts.Client, ps.Client), Server: applied(d.Hosts.Server, ps.Server)}
	for i := range d.Directions {
		dir := &d.Directions[i]
		recv, send := after.Client, after.Server
		if dir.Name == wire.PhaseUpload {
			recv, send = send, recv
		}
		if m, err := model(recv, send, rtt, d.PathRateBps); err == nil {
			dir.Model.AfterPlansBps, dir.Model.AfterPlansLimit = m.ExpectedBps, m.LimitedBy
		}
	}
	return nil
}

// applied is a copy of s with the plan's sysctls set.
func applied(s *snapshot.Snapshot, p plan.Plan) *snapshot.Snapshot {
	c := *s
	c.Sysctls = make(map[string]string, len(s.Sysctls))
	for k, v := range s.Sysctls {
		c.Sysctls[k] = v
	}
	for _, it := range p.Items {
		if it.Kind == plan.KindSysctl {
			c.Sysctls[it.Key] = it.New
		}
	}
	return &c
}
