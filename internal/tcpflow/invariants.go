package tcpflow

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/longhaul/longhaul/internal/diagnose"
)

// CheckInvariants returns what in a flow's report contradicts itself
// (nil when nothing does): the achieved rate above the ceiling the
// window sets (more than 10%), more in flight than the largest window
// the receiver advertised allows (65,535 bytes without window scaling),
// shares that do not sum to 1, and a summary whose share is not the
// verdict's. analyze runs it on every flow and reports what it finds as
// a flag, so a contradiction is seen, never printed as fact.
func CheckInvariants(f *FlowReport) []string {
	var out []string
	for i := range f.Directions {
		d := &f.Directions[i]
		for _, m := range checkVerdict(d.Verdict, d.WindowScale.State, d.MSS) {
			out = append(out, d.Sender+": "+m)
		}
	}
	return out
}

func checkVerdict(v diagnose.Verdict, scale string, mss int) []string {
	var out []string
	if v.CeilingBps > 0 && v.ThroughputBps > v.CeilingBps*1.1 {
		out = append(out, fmt.Sprintf("achieved %.0f bit/s above the ceiling %.0f bit/s", v.ThroughputBps, v.CeilingBps))
	}
	bound := v.RwndBytes
	if scale == diagnose.ScaleNotNegotiated {
		bound = 65535
	}
	if bound > 0 && scale != diagnose.ScaleUnknown && v.InflightBytes > bound+int64(max(mss, 1460)) {
		out = append(out, fmt.Sprintf("%d bytes in flight above the window bound %d", v.InflightBytes, bound))
	}
	if len(v.Shares) > 0 {
		sum := 0.0
		for _, s := range v.Shares {
			sum += s
		}
		if math.Abs(sum-1) > 0.01 {
			out = append(out, fmt.Sprintf("shares sum to %.3f", sum))
		}
	}
	if p, ok := leadingPercent(v.Summary); ok && v.Share > 0 && math.Abs(p-100*v.Share) > 1 {
		out = append(out, fmt.Sprintf("summary says %.0f%%, the share is %.1f%%", p, 100*v.Share))
	}
	if v.Share > 0 {
		if s := stateShare(v); s >= 0 && math.Abs(s-v.Share) > 0.01 {
			out = append(out, fmt.Sprintf("verdict share %.3f, its states' share %.3f", v.Share, s))
		}
	}
	return out
}

// stateShare is the share of the states a verdict rests on, or -1 when
// the verdict has no states of its own.
func stateShare(v diagnose.Verdict) float64 {
	switch v.Verdict {
	case diagnose.LossLimited, diagnose.Bottleneck:
		return v.Shares[diagnose.StateLoss.String()] + v.Shares[diagnose.StateNetwork.String()]
	case diagnose.SndbufLimited:
		if _, ok := v.Shares[diagnose.StateSndbuf.String()]; !ok {
			return v.Shares[diagnose.StateLoss.String()] + v.Shares[diagnose.StateNetwork.String()]
		}
		return v.Shares[diagnose.StateSndbuf.String()]
	case diagnose.RwndLimited:
		return v.Shares[diagnose.StateRwnd.String()]
	case diagnose.ZeroWindow:
		return v.Shares[diagnose.StateZeroWindow.String()]
	case diagnose.AppLimited:
		return v.Shares[diagnose.StateApp.String()]
	case diagnose.SlowStart:
		return v.Shares[diagnose.StateSlowStart.String()]
	}
	return -1
}

// leadingPercent reads the whole "NN% of" a summary starts with: the
// share it states (a loss rate is written with decimals, "1.00%").
func leadingPercent(s string) (float64, bool) {
	i := strings.IndexByte(s, '%')
	if i <= 0 || i > 3 || !strings.HasPrefix(s[i:], "% of ") {
		return 0, false
	}
	p, err := strconv.Atoi(s[:i])
	return float64(p), err == nil
}
