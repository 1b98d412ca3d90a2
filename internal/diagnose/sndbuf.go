package diagnose

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// SndbufModel is the evidence that a flow's flight was what its sender's
// send buffer holds, for samples without the socket's own sk_sndbuf (a
// serve older than the memory read): flows' split of the interval
// decides from sk_sndbuf when it has it.
type SndbufModel struct {
	// Known: the samples carried sk_sndbuf; the verdict stands.
	Known bool
	// Inflight is the largest flight; ModelFlight what the path model
	// says the sender's tcp_wmem holds in flight; SenderLimits: the
	// model has the sender's buffer, not the receiver's window or the
	// path, as the limit.
	Inflight     int64
	ModelFlight  float64
	SenderLimits bool
	RTT, MinRTT  time.Duration
	Retrans      int64
	Sender       string // "the server"
	Scope        string // what the share is of ("the steady half")
}

// SndbufHidden re-judges a flow the kernel's chrono stats call bound by
// its congestion window (or in slow start) when its flight is what the
// sender's send buffer allows. The kernel starts
// TCP_CHRONO_SNDBUF_LIMITED only when the socket is not cwnd-limited
// (tcp_cwnd_validate), and a flow held by a small send buffer below the
// BDP keeps its cwnd just above its flight, so the kernel often counts
// that time as cwnd time (measured: 128 KiB of tcp_wmem at 50 ms, 100%
// "congestion window", no loss, RTT at its minimum). The evidence for
// the buffer instead: no queue stood, nothing was lost, the largest
// flight within 25% of what the model says the sender's tcp_wmem holds,
// and the model has the sender's buffer as the limit.
func SndbufHidden(v Verdict, m SndbufModel) Verdict {
	if (v.Verdict != Bottleneck && v.Verdict != SlowStart) || m.Known || QueueStood(m.RTT, m.MinRTT) || m.Retrans > 0 || m.ModelFlight <= 0 || !m.SenderLimits {
		return v
	}
	if r := float64(m.Inflight) / m.ModelFlight; r < 0.75 || r > 1.25 {
		return v
	}
	was := v.Verdict
	v.Verdict = SndbufLimited
	shares := map[string]float64{}
	for k, x := range v.Shares {
		shares[k] = x
	}
	shares[SndbufLimited] = v.Share
	v.Shares = shares
	v.Summary = fmt.Sprintf("%s of %s the flight stayed at %s, what the %s's send buffer holds (the model: %s), with the RTT at its minimum (%s, no queue) and nothing lost; the kernel counted that time as %s because a flow held by its send buffer keeps its congestion window just above its flight",
		pct(v.Share), orWord(m.Scope, "the transfer"), units.FormatBytes(float64(m.Inflight)), m.Sender, units.FormatBytes(m.ModelFlight),
		units.FormatDuration(m.RTT.Round(100*time.Microsecond)), was)
	v.Fix = fmt.Sprintf("raise net.ipv4.tcp_wmem's maximum on the %s (see its plan)", m.Sender)
	return v
}
