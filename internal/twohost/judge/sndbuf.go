package judge

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// sndbufHidden re-judges a flow the kernel's chrono stats call
// congestion-window-bound when its flight is what the sender's send
// buffer allows. The kernel starts TCP_CHRONO_SNDBUF_LIMITED only when
// the socket is not cwnd-limited (tcp_cwnd_validate), and a flow held by
// a small send buffer below the BDP keeps its cwnd just above its
// flight, so the kernel often counts that time as cwnd time (measured
// here: 128 KiB of tcp_wmem at 50 ms, 100% "congestion window", no loss,
// RTT at its minimum). The evidence for the buffer instead: no queue
// stood (the smoothed RTT stayed near its minimum), nothing was lost,
// the largest flight is within 25% of what the path model says the
// sender's tcp_wmem holds, and the model has the sender's buffer, not the
// receiver's window or the path, as the limit.
//
// flows.Judge makes that call itself from the socket's sk_sndbuf
// (flows.SplitInterval); this model-based re-judgement is only the
// fallback for samples without it (a serve older than the memory read).
func sndbufHidden(dir testdoc.Direction) bool {
	f, m := dir.Flow, dir.Model
	v := f.Verdict.Verdict
	if (v != diagnose.Bottleneck && v != diagnose.SlowStart) || f.SndbufBytes > 0 {
		return false
	}
	rtt, minRTT := secsDur(f.RTT), secsDur(f.MinRTT)
	if diagnose.QueueStood(rtt, minRTT) || f.Retrans > 0 || m.SenderInFlightBytes <= 0 {
		return false
	}
	r := float64(f.InflightBytes) / m.SenderInFlightBytes
	return r >= 0.75 && r <= 1.25 && m.LimitedBy == "sender"
}

func secsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// asSndbuf rewrites the verdict as sndbuf-limited, saying why.
func asSndbuf(dir *testdoc.Direction) {
	v := &dir.Flow.Verdict
	was := v.Verdict
	v.Verdict = diagnose.SndbufLimited
	if v.Shares == nil {
		v.Shares = map[string]float64{}
	}
	v.Shares[diagnose.SndbufLimited] = v.Share
	v.Summary = fmt.Sprintf("%.0f%% of the steady half the flight stayed at %s, what the %s's send buffer holds (the model: %s), with the RTT at its minimum (%s, no queue) and nothing lost; the kernel counted that time as %s because a flow held by its send buffer keeps its congestion window just above its flight",
		100*v.Share, units.FormatBytes(float64(dir.Flow.InflightBytes)), dir.Sender, units.FormatBytes(dir.Model.SenderInFlightBytes),
		units.FormatDuration(secsDur(dir.Flow.RTT).Round(100*time.Microsecond)), was)
	v.Fix = fmt.Sprintf("raise net.ipv4.tcp_wmem's maximum on the %s (see its plan)", dir.Sender)
}
