package diagnose

import (
	"strings"
	"testing"
	"time"
)

// TestSndbufHidden: a flow the kernel called cwnd-bound whose flight is
// what the sender's tcp_wmem holds, with no queue and no loss, is
// sndbuf-limited; any piece of evidence missing leaves the verdict.
func TestSndbufHidden(t *testing.T) {
	v := Verdict{Verdict: Bottleneck, Share: 0.9, Shares: map[string]float64{"network": 0.9}}
	m := SndbufModel{Inflight: 120_000, ModelFlight: 131_072, SenderLimits: true, RTT: 51 * time.Millisecond, MinRTT: 50 * time.Millisecond,
		Sender: "server", Scope: "the steady half"}
	got := SndbufHidden(v, m)
	if got.Verdict != SndbufLimited || got.Shares[SndbufLimited] != 0.9 || !strings.Contains(got.Summary, "90% of the steady half the flight stayed at 120 kB") ||
		!strings.Contains(got.Fix, "tcp_wmem's maximum on the server") || v.Shares[SndbufLimited] != 0 {
		t.Fatalf("%+v (input's shares %v)", got, v.Shares)
	}
	for name, mod := range map[string]func(*SndbufModel){
		"sk_sndbuf read":        func(m *SndbufModel) { m.Known = true },
		"a loss":                func(m *SndbufModel) { m.Retrans = 1 },
		"a queue stood":         func(m *SndbufModel) { m.RTT = 80 * time.Millisecond },
		"flight far over model": func(m *SndbufModel) { m.Inflight = 200_000 },
		"receiver limits":       func(m *SndbufModel) { m.SenderLimits = false },
	} {
		x := m
		mod(&x)
		if got := SndbufHidden(v, x); got.Verdict != Bottleneck {
			t.Errorf("%s: %s", name, got.Verdict)
		}
	}
}
