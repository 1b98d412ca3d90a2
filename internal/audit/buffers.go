package audit

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
)

// kernelDefaultRmemMax is tcp_rmem[2]'s default since 2025 (net-next,
// "tcp: increase tcp_rmem[2] to 32 MB"); hosts still on 6 MiB are the
// buffers seed's case.
const kernelDefaultRmemMax = 32 << 20

// referenceRTTs are the RTTs shown when no path is given.
var referenceRTTs = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}

func size(n int64) string {
	return fmt.Sprintf("%s (%d)", units.FormatIEC(float64(n)), n)
}

func pathText(p Path) string {
	s := fmt.Sprintf("%s at %s", units.FormatRate(p.RateBps), units.FormatDuration(p.RTT))
	if p.flows() > 1 {
		s = fmt.Sprintf("%s over %d flows", s, p.flows())
	}
	return s
}

// severityFor grades a ceiling against the rate the path needs.
func severityFor(ceiling, rate float64) Severity {
	switch {
	case ceiling < 0.5*rate:
		return Crit
	case ceiling < 0.95*rate:
		return Warn
	}
	return Info
}

func atRTTs(window float64) string {
	parts := make([]string, len(referenceRTTs))
	for i, rtt := range referenceRTTs {
		parts[i] = fmt.Sprintf("%s at %s", units.FormatRate(pathmodel.WindowCeiling(window, rtt)), units.FormatDuration(rtt))
	}
	return strings.Join(parts, ", ")
}

// modelFor runs the path model with this host's settings at both ends.
func modelFor(s *snapshot.Snapshot, p Path) (pathmodel.Result, bool) {
	in := s.ModelInput()
	in.RTT, in.RateBps, in.Flows = p.RTT, p.RateBps, p.flows()
	r, err := pathmodel.Compute(in)
	return r, err == nil
}

// bufferCheck judges tcp_rmem[2] (receive) or tcp_wmem[2] (send).
func bufferCheck(s *snapshot.Snapshot, p Path, receive bool) []Finding {
	key, role := "net.ipv4.tcp_wmem", "sender"
	ratioWhy := fmt.Sprintf("a sender keeps about %.2g of tcp_wmem[2] in flight on average (the write queue is charged skb truesize and refilled only when a third is free)", pathmodel.SendRatio)
	if receive {
		key, role = "net.ipv4.tcp_rmem", "receiver"
		ratioWhy = fmt.Sprintf("a receiver advertises %.2g of tcp_rmem[2] as window (%s)", s.RecvRatio().Value, s.RecvRatio().Basis)
	}
	t, ok := s.Triple(key)
	if !ok {
		return nil
	}
	id := strings.ReplaceAll(strings.TrimPrefix(key, "net.ipv4."), "_", "-") + "-max"
	ratio := pathmodel.SendRatio
	if receive {
		ratio = s.RecvRatio().Value
	}
	window := min(float64(t.Max)*ratio, pathmodel.MaxWindow)
	f := Finding{ID: id, Key: key}
	if !p.given() {
		f.Severity = Info
		f.Observed = fmt.Sprintf("%s max %s: window %s", key, size(t.Max), units.FormatBytes(window))
		f.Expected = "a window of at least the bandwidth-delay product of your longest path"
		f.Why = fmt.Sprintf("%s; one flow can reach %s", ratioWhy, atRTTs(window))
		f.Fix = "judge it for your path: longhaul audit --rtt RTT --rate RATE"
		if receive && t.Max < kernelDefaultRmemMax {
			f.Severity = Warn
			f.Expected = fmt.Sprintf("at least %s, the kernel's own default since 2025", size(kernelDefaultRmemMax))
			f.Fix = fmt.Sprintf("sysctl -w %s=\"%d %d %d\", or size it for your path: longhaul audit --rtt RTT --rate RATE", key, t.Min, t.Default, int64(kernelDefaultRmemMax))
		}
		return []Finding{f}
	}
	r, ok := modelFor(s, p)
	if !ok {
		return nil
	}
	end := r.Sender
	if receive {
		end = r.Receiver
	}
	f.Severity = severityFor(end.AggregateCeilingBps, p.RateBps)
	f.Observed = fmt.Sprintf("%s max %s caps one flow at %s at %s", key, size(t.Max), units.FormatRate(end.CeilingBps), units.FormatDuration(p.RTT))
	if p.flows() > 1 {
		f.Observed += fmt.Sprintf(" (%d flows: %s)", p.flows(), units.FormatRate(end.AggregateCeilingBps))
	}
	f.Expected = fmt.Sprintf(">= %s for %s", size(end.NeededBytes), pathText(p))
	f.Why = fmt.Sprintf("the path's bandwidth-delay product is %s per flow; %s, so a %s of %s allows a window of %s per round trip",
		units.FormatBytes(float64(r.FlowBDPBytes)), ratioWhy, role, units.FormatIEC(float64(t.Max)), units.FormatBytes(window))
	if f.Severity == Info {
		f.Fix = "none needed"
		return []Finding{f}
	}
	if end.NeededBytes <= t.Max {
		// The buffer covers the need: the cap is the largest window TCP
		// can advertise (65535 << 14), so only more flows help.
		flows := int(math.Ceil(p.RateBps / end.CeilingBps))
		f.Expected = fmt.Sprintf("%d or more parallel flows: one flow's window cannot exceed %s", flows, units.FormatBytes(pathmodel.MaxWindow))
		f.Why = fmt.Sprintf("the path's bandwidth-delay product is %s per flow, more than the largest window TCP can advertise (65,535 x 2^14 bytes, RFC 7323)", units.FormatBytes(float64(r.FlowBDPBytes)))
		f.Fix = fmt.Sprintf("spread the transfer over at least %d parallel flows (e.g. iperf3 -P %d, parallel rsync/rclone streams); buffers cannot help", flows, flows)
		return []Finding{f}
	}
	f.Fix = fmt.Sprintf("sysctl -w %s=\"%d %d %d\" on the %s (this path needs %s; the value adds %.0f%% headroom, as longhaul plan does); to keep it across reboots put the same line in a file under /etc/sysctl.d/",
		key, t.Min, t.Default, pathmodel.PlannedBuffer(end.NeededBytes), role, units.FormatIEC(float64(end.NeededBytes)), 100*(pathmodel.Headroom-1))
	return []Finding{f}
}

func checkRmem(s *snapshot.Snapshot, p Path) []Finding { return bufferCheck(s, p, true) }
func checkWmem(s *snapshot.Snapshot, p Path) []Finding { return bufferCheck(s, p, false) }

// checkAutotuning: with tcp_moderate_rcvbuf=0 receive buffers never grow
// past tcp_rmem[1].
func checkAutotuning(s *snapshot.Snapshot, p Path) []Finding {
	v, ok := s.Int("net.ipv4.tcp_moderate_rcvbuf")
	if !ok || v != 0 {
		return nil
	}
	t, tok := s.Triple("net.ipv4.tcp_rmem")
	if !tok {
		t.Default = 131072 // the kernel's default tcp_rmem[1]
	}
	window := float64(t.Default) * s.RecvRatio().Value
	rtt := 100 * time.Millisecond
	if p.given() {
		rtt = p.RTT
	}
	return []Finding{{
		ID: "receive-autotuning-off", Severity: Crit, Key: "net.ipv4.tcp_moderate_rcvbuf",
		Observed: "net.ipv4.tcp_moderate_rcvbuf = 0",
		Expected: "1 (receive buffer autotuning on)",
		Why: fmt.Sprintf("without autotuning every receive buffer stays at tcp_rmem[1] = %s: a window of %s caps a flow at %s at %s",
			size(t.Default), units.FormatBytes(window), units.FormatRate(pathmodel.WindowCeiling(window, rtt)), units.FormatDuration(rtt)),
		Fix: "sysctl -w net.ipv4.tcp_moderate_rcvbuf=1",
	}}
}

// checkCoreMax: applications that set SO_RCVBUF/SO_SNDBUF (iperf3 -w,
// nginx listen rcvbuf=) turn autotuning off and are clamped to
// 2 x net.core.rmem_max / wmem_max.
func checkCoreMax(s *snapshot.Snapshot, p Path) []Finding {
	var out []Finding
	for _, c := range []struct {
		core, tcp, opt string
		receive        bool
	}{
		{"net.core.rmem_max", "net.ipv4.tcp_rmem", "SO_RCVBUF", true},
		{"net.core.wmem_max", "net.ipv4.tcp_wmem", "SO_SNDBUF", false},
	} {
		core, ok := s.Int(c.core)
		t, tok := s.Triple(c.tcp)
		if !ok || !tok || 2*core >= t.Max {
			continue
		}
		ratio := pathmodel.SendRatio
		if c.receive {
			ratio = s.RecvRatio().Value
		}
		rtt := 100 * time.Millisecond
		if p.given() {
			rtt = p.RTT
		}
		sb := pathmodel.SetSockBuf(pathmodel.MaxBuffer, core, c.receive, ratio, rtt)
		f := Finding{
			ID: strings.ReplaceAll(strings.TrimPrefix(c.core, "net.core."), "_", "-") + "-clamps-apps", Severity: Info, Key: c.core,
			Observed: fmt.Sprintf("%s %s is below %s max %s", c.core, size(core), c.tcp, size(t.Max)),
			Expected: fmt.Sprintf("%s >= what applications that set %s need", c.core, c.opt),
			Why: fmt.Sprintf("an application that sets %s turns autotuning off and gets at most 2 x %s = %s: a window of %s, %s at %s (iperf3 -w is silently capped this way)",
				c.opt, c.core, units.FormatIEC(float64(sb.BufferBytes)), units.FormatBytes(sb.WindowBytes), units.FormatRate(sb.CeilingBps), units.FormatDuration(rtt)),
			Fix: fmt.Sprintf("only if an application sets %s: raise %s, or better remove the application's setting so autotuning works", c.opt, c.core),
		}
		if p.given() && sb.CeilingBps < 0.95*p.RateBps/float64(p.flows()) {
			need := pathmodel.BufferFor(min(pathmodel.BDP(p.RateBps/float64(p.flows()), p.RTT), pathmodel.MaxWindow), ratio)
			f.Severity = Warn
			f.Expected = fmt.Sprintf("%s >= %s so that %s can cover %s", c.core, size((need+1)/2), c.opt, pathText(p))
			f.Fix = fmt.Sprintf("sysctl -w %s=%d, or remove the application's %s setting (e.g. iperf3 -w, nginx listen ... rcvbuf=/sndbuf=) so autotuning works", c.core, (pathmodel.PlannedBuffer(need)+1)/2, c.opt)
		}
		out = append(out, f)
	}
	return out
}

// checkTCPMem: tcp_mem is the global budget, in pages, for all TCP
// buffers; above "pressure" the kernel shrinks them.
func checkTCPMem(s *snapshot.Snapshot, p Path) []Finding {
	m, ok := s.TCPMem()
	if !ok {
		return nil
	}
	if m[0] <= 0 || m[0] > m[1] || m[1] > m[2] {
		return []Finding{{ID: "tcp-mem", Key: "net.ipv4.tcp_mem", Severity: Warn,
			Observed: fmt.Sprintf("net.ipv4.tcp_mem %d %d %d pages", m[0], m[1], m[2]),
			Expected: "three positive values ordered min <= pressure <= max",
			Why:      "the kernel accepts any order, but memory pressure then starts or stops at the wrong point for every TCP socket",
			Fix:      "remove the net.ipv4.tcp_mem line from sysctl configuration and reboot: the kernel sizes it from RAM",
		}}
	}
	pressure, maxB := m[1]*s.PageSize, m[2]*s.PageSize
	f := Finding{ID: "tcp-mem", Key: "net.ipv4.tcp_mem", Severity: Info,
		Observed: fmt.Sprintf("net.ipv4.tcp_mem %d %d %d pages: pressure at %s, max %s", m[0], m[1], m[2], units.FormatIEC(float64(pressure)), units.FormatIEC(float64(maxB))),
		Expected: "room for the buffers of all concurrent long flows below the pressure value",
		Why:      "tcp_mem is the host-wide budget for TCP buffers; above its pressure value the kernel shrinks every socket's buffer",
		Fix:      "none needed",
	}
	if s.MemTotal > 0 && maxB > s.MemTotal {
		f.Severity = Warn
		f.Expected = fmt.Sprintf("a maximum below RAM (%s); the kernel's default is about 9%% of it", units.FormatIEC(float64(s.MemTotal)))
		f.Why = "a fixed tcp_mem copied from tuning guides lets TCP buffers take more memory than the machine has"
		f.Fix = "remove the net.ipv4.tcp_mem line from sysctl configuration and reboot, or set it from a memory budget sized for your flows"
		return []Finding{f}
	}
	if !p.given() {
		return []Finding{f}
	}
	r, ok := modelFor(s, p)
	if !ok || r.Memory == nil {
		return []Finding{f}
	}
	mem := r.Memory
	f.Observed += fmt.Sprintf("; %d flow(s) on this path take up to %s", p.flows(), units.FormatIEC(float64(mem.NeededBytes)))
	switch {
	case !mem.FitsMax:
		f.Severity = Crit
	case !mem.FitsPressure:
		f.Severity = Warn
	default:
		return []Finding{f}
	}
	f.Expected = fmt.Sprintf("pressure above %s for %s", units.FormatIEC(float64(mem.NeededBytes)), pathText(p))
	f.Why = fmt.Sprintf("%s: above pressure the kernel shrinks buffers and flows fall below the path rate", f.Why)
	pages := (mem.NeededBytes + s.PageSize - 1) / s.PageSize
	f.Fix = fmt.Sprintf("sysctl -w net.ipv4.tcp_mem=\"%d %d %d\" if memory allows, or run fewer flows", m[0], max(m[1], pages*5/4), max(m[2], pages*3/2))
	return []Finding{f}
}
