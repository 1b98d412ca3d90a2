package emupath

import (
	"slices"
	"strconv"
	"time"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/topo"
)

// Self-test tolerances. The emulator's own idle RTT target is 0.5 ms
// (checked with ping by make bench-emulator); the Go UDP probes used here
// add their own scheduling on both ends (+0.1-0.2 ms measured), so the
// self-test allows 1 ms. Goodput: the share of the goodput ceiling a
// single flow with ample buffers must reach.
const (
	CheckRTTTolerance = time.Millisecond
	CheckGoodputShare = 0.90
	checkProbes       = 20
	checkEchoPort     = 7
	checkDataPort     = 5299
)

// CheckBuffer is the buffer maximum the self-test gives both ends: 2.5
// BDPs plus the queue (at least 4 MiB), or 256 MiB on an unlimited link.
func CheckBuffer(l Link) int64 {
	if l.Down.RateBps == 0 {
		return min(256<<20, pathmodel.MaxBuffer)
	}
	_, down, err := l.Configs()
	if err != nil {
		return 4 << 20
	}
	buf := max(int64(4<<20), int64(2.5*pathmodel.BDP(down.RateBps, l.RTT())+float64(down.QueueBytes)))
	return min(buf, pathmodel.MaxBuffer)
}

// CheckSysctls are the namespace settings of the self-test's ends.
func CheckSysctls(buf int64) []topo.Sysctl {
	v := "4096 131072 " + itoa(buf)
	return []topo.Sysctl{{Key: "net.ipv4.tcp_rmem", Value: v}, {Key: "net.ipv4.tcp_wmem", Value: v}}
}

// CheckResult is what the self-test measured on a path.
type CheckResult struct {
	RTTs     []time.Duration // one per UDP probe
	Goodput  float64         // bits/s over the second half of the download
	Duration time.Duration   // of the download
	Stats    emu.Stats       // the emulator's, after the test
}

// CheckVerdict compares a CheckResult with the path's configuration.
type CheckVerdict struct {
	MeanRTT, P99RTT, RTTError time.Duration
	RTTOK                     bool
	// CeilingBps is the goodput ceiling of the down direction's rate; 0
	// on an unlimited link, where goodput is not judged.
	CeilingBps float64
	// WindowBoundBps is, on an unlimited link, what the self-test's
	// buffers (CheckBuffer) allow at the link's RTT: the goodput to
	// expect there.
	WindowBoundBps float64
	GoodputOK      bool
	// NotJudged says why goodput was not judged: the down direction is
	// impaired on purpose (its impairments listed).
	NotJudged []string
	// ExpectedRTT is the configured RTT plus the mean extra delay of
	// reordering.
	ExpectedRTT time.Duration
	EmulatorOK  bool
}

// OK reports whether every part passed.
func (v CheckVerdict) OK() bool { return v.RTTOK && v.GoodputOK && v.EmulatorOK }

// Judge compares the measurement with the link's configuration: the
// RTT (with reordering's mean extra delay) and, on a down direction that
// is not impaired on purpose, the goodput of its rate.
func (r CheckResult) Judge(l Link) CheckVerdict {
	rtts := slices.Sorted(slices.Values(r.RTTs))
	v := CheckVerdict{ExpectedRTT: l.RTT()}
	up, down, err := l.Configs()
	if err != nil {
		v.NotJudged = []string{err.Error()}
	}
	v.NotJudged = append(v.NotJudged, down.Impairments()...)
	for _, c := range []linkemu.Config{up, down} {
		v.ExpectedRTT += time.Duration(c.Reorder.Share * float64(c.Reorder.Extra))
	}
	rtt, downRateBps := v.ExpectedRTT, l.Down.RateBps
	if len(rtts) > 0 {
		var sum time.Duration
		for _, x := range rtts {
			sum += x
		}
		v.MeanRTT = sum / time.Duration(len(rtts))
		v.P99RTT = rtts[min(len(rtts)-1, len(rtts)*99/100)]
		v.RTTError = v.MeanRTT - rtt
		v.RTTOK = v.RTTError >= -CheckRTTTolerance && v.RTTError <= CheckRTTTolerance
	}
	v.GoodputOK = true
	if downRateBps > 0 && len(v.NotJudged) == 0 {
		const mtu = 1500
		v.CeilingBps = downRateBps * float64(mtu-52) / float64(mtu+38)
		v.GoodputOK = r.Goodput >= CheckGoodputShare*v.CeilingBps
	}
	if downRateBps == 0 {
		v.WindowBoundBps = pathmodel.WindowCeiling(float64(CheckBuffer(l))*pathmodel.DefaultScalingRatio, l.RTT())
	}
	v.EmulatorOK = !r.Stats.Overloaded
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
