// Buffer sizing: the receive and send buffer maxima a path needs, what an
// application's SO_RCVBUF/SO_SNDBUF request gives, and the core limits.

package plan

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// plannedMax is the buffer maximum planned for a need (the path model's
// one rule, which audit's findings print too).
func plannedMax(need int64) int64 { return pathmodel.PlannedBuffer(need) }

func triple(t pathmodel.Triple) string { return fmt.Sprintf("%d %d %d", t.Min, t.Default, t.Max) }

// buffer plans tcp_rmem (receive) or tcp_wmem.
func (b *builder) buffer(receive bool) {
	key, end, role := "net.ipv4.tcp_wmem", b.now.Sender, "sender"
	ratioWhy := fmt.Sprintf("a sender keeps about %.2g of tcp_wmem[2] in flight on average (the write queue is charged skb truesize and refilled only when a third is free)", pathmodel.SendRatio)
	if receive {
		key, end, role = "net.ipv4.tcp_rmem", b.now.Receiver, "receiver"
		ratioWhy = fmt.Sprintf("a receiver advertises %.2g of tcp_rmem[2] as window (%s)", b.now.RecvRatio.Value, b.now.RecvRatio.Basis)
	}
	cur, ok := b.s.Triple(key)
	if !ok {
		b.warn("%s could not be read or parsed: not planned", key)
		return
	}
	need := end.NeededBytes
	flowBDP := units.FormatBytes(float64(b.now.FlowBDPBytes))
	if cur.Max >= need {
		b.note("%s: max %s already covers the %s need of %s per flow: left alone", key, units.FormatIEC(float64(cur.Max)), role, units.FormatIEC(float64(need)))
		return
	}
	target := plannedMax(need)
	nt := pathmodel.Triple{Min: cur.Min, Default: cur.Default, Max: target}
	if nt.Validate() != nil {
		b.warn("%s: %s with max %d would not be a valid triple: not planned", key, triple(cur), target)
		return
	}
	if receive {
		b.rmemMax = target
	} else {
		b.wmemMax = target
	}
	flows := ""
	if b.req.Flows > 1 {
		flows = fmt.Sprintf(" (%d flows: %s)", b.req.Flows, units.FormatRate(end.AggregateCeilingBps))
	}
	b.add(Item{
		Key: key, Kind: KindSysctl, Scope: ScopeNetns,
		Current: triple(cur), New: triple(nt),
		Why: fmt.Sprintf("each flow needs a window of its share of the BDP, %s, per round trip; %s, so the %s needs a buffer of %s; the current max %s caps a flow at %s at %s%s. New max: the need + %.0f%% headroom (queueing delay, ratio variation), rounded up to a MiB; min and default unchanged",
			flowBDP, ratioWhy, role, units.FormatIEC(float64(need)), units.FormatIEC(float64(cur.Max)),
			units.FormatRate(end.CeilingBps), units.FormatDuration(b.req.RTT), flows, 100*(Headroom-1)),
		MemoryBytes: int64(b.req.Flows) * target,
	})
}

// soRequest is the SO_RCVBUF/SO_SNDBUF value an application should ask
// for to get buffer bytes: the kernel doubles the request.
func soRequest(buffer int64) int64 { return (buffer + 1) / 2 }

// endBuffer is the planned (or current) buffer maximum for one end.
func (b *builder) endBuffer(receive bool) int64 {
	planned, end := b.wmemMax, b.now.Sender
	if receive {
		planned, end = b.rmemMax, b.now.Receiver
	}
	if planned > 0 {
		return planned
	}
	return plannedMax(end.NeededBytes)
}

// coreMax plans net.core.rmem_max/wmem_max for applications that set
// SO_RCVBUF/SO_SNDBUF.
func (b *builder) coreMax() {
	if !b.req.AppBuffers {
		return
	}
	for _, c := range []struct {
		key, opt string
		receive  bool
	}{
		{"net.core.rmem_max", "SO_RCVBUF", true},
		{"net.core.wmem_max", "SO_SNDBUF", false},
	} {
		if (c.receive && !b.req.Role.receives()) || (!c.receive && !b.req.Role.sends()) {
			continue
		}
		cur, ok := b.s.Int(c.key)
		if !ok {
			b.warn("%s could not be read: not planned", c.key)
			continue
		}
		ratio := pathmodel.SendRatio
		if c.receive {
			ratio = b.now.RecvRatio.Value
		}
		want := soRequest(b.endBuffer(c.receive))
		if cur >= want {
			b.note("%s: %s already lets an application's %s of %s through unclamped: left alone", c.key, units.FormatIEC(float64(cur)), c.opt, units.FormatIEC(float64(want)))
			continue
		}
		before := pathmodel.SetSockBuf(want, cur, c.receive, ratio, b.req.RTT)
		after := pathmodel.SetSockBuf(want, want, c.receive, ratio, b.req.RTT)
		b.add(Item{
			Key: c.key, Kind: KindSysctl, Scope: ScopeHost,
			Current: fmt.Sprint(cur), New: fmt.Sprint(want),
			Why: fmt.Sprintf("an application that sets %s turns autotuning off and gets 2 x min(request, %s): asking for %s now gets %s, a window of %s, %s at %s; with %s = %s it gets %s, a window of %s, %s",
				c.opt, c.key, units.FormatIEC(float64(want)), units.FormatIEC(float64(before.BufferBytes)), units.FormatBytes(before.WindowBytes), units.FormatRate(before.CeilingBps), units.FormatDuration(b.req.RTT),
				c.key, units.FormatIEC(float64(want)), units.FormatIEC(float64(after.BufferBytes)), units.FormatBytes(after.WindowBytes), units.FormatRate(after.CeilingBps)),
			MemoryBytes: int64(b.req.Flows) * after.BufferBytes,
		})
	}
}
