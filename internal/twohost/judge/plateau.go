package judge

import (
	"cmp"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
)

// series is what all of a phase's sender sockets together had delivered
// (acknowledged or SACKed) at each sock_diag dump, up to the last dump
// that moved data. One dump gives every socket the same T, so the sum is
// taken per dump: summing each socket's own rate over its own times
// would mix windows and overstate the total.
type series struct {
	t         []float64
	delivered []int64
	retrans   int64 // over the whole phase, all sockets
	minRTT    time.Duration
}

func seriesOf(samples []flows.Sample) series {
	var out series
	last := map[string]int64{}
	lastRetrans := map[string]int64{}
	sorted := slices.Clone(samples)
	slices.SortStableFunc(sorted, func(a, b flows.Sample) int { return cmp.Compare(a.T, b.T) })
	for i, s := range sorted {
		last[s.Sock.Key()] = s.Sock.BytesAcked + s.Sock.SackedBytes
		lastRetrans[s.Sock.Key()] = s.Sock.Retrans
		if m := s.Sock.MinRTT; m > 0 && (out.minRTT == 0 || m < out.minRTT) {
			out.minRTT = m
		}
		if i+1 < len(sorted) && sorted[i+1].T == s.T {
			continue
		}
		var sum int64
		for _, v := range last {
			sum += v
		}
		out.t, out.delivered = append(out.t, s.T), append(out.delivered, sum)
	}
	for _, v := range lastRetrans {
		out.retrans += v
	}
	end := len(out.t) - 1
	for end > 0 && out.delivered[end] == out.delivered[end-1] {
		end--
	}
	out.t, out.delivered = out.t[:end+1], out.delivered[:end+1]
	return out
}

// rate is the rate delivered between dumps i and j.
func (s series) rate(i, j int) float64 {
	if j <= i || s.t[j] <= s.t[i] {
		return 0
	}
	return float64(s.delivered[j]-s.delivered[i]) * 8 / (s.t[j] - s.t[i])
}

// half is the index where the second half of the active time begins
// (-1 when fewer than three dumps moved data).
func (s series) half() int {
	end := len(s.t) - 1
	if end < 2 {
		return -1
	}
	mid := s.t[0] + (s.t[end]-s.t[0])/2
	i := 0
	for i < end-1 && s.t[i] < mid {
		i++
	}
	return i
}

// plateauWindow is the span each window rate of the plateau is taken
// over: two round trips (BBR's gain cycle and a cubic sawtooth's teeth
// move one window, not the median), at least 0.3 s of dumps.
func plateauWindow(rtt time.Duration) float64 {
	return max(2*rtt, 300*time.Millisecond).Seconds()
}

// minSteadyWindows is how many windows a plateau needs: fewer, and the
// phase ended about when the streams first reached their rate (a 2 s
// phase at 170 ms x 1 Gbit/s: one window at 939 Mbit/s before the
// start-up's overshoot lost, which a plateau of one window would not
// show).
const minSteadyWindows = 3

// plateau is the steady rate the streams held once their ramp was over:
// the median of back-to-back windows' rates from the first window within
// a fifth of the fastest on, and how many windows that is. Slow start's
// windows are not in it (an average over a long path's phase half spent
// ramping sits well under what the path carried once it was full); a
// brief dip (BBR's ProbeRTT) moves a median little. 0 when no window
// follows the ramp.
func (s series) plateau() (bps float64, windows int) {
	w := plateauWindow(s.minRTT)
	var rates []float64
	for i := 0; i < len(s.t)-1; {
		j := i + 1
		for j < len(s.t)-1 && s.t[j]-s.t[i] < w {
			j++
		}
		if s.t[j]-s.t[i] < w/2 {
			break // a last window too short to weigh
		}
		rates = append(rates, s.rate(i, j))
		i = j
	}
	peak := 0.0
	for _, r := range rates {
		peak = max(peak, r)
	}
	from := slices.IndexFunc(rates, func(r float64) bool { return r >= 0.8*peak })
	if from < 0 {
		return 0, 0
	}
	steady := slices.Clone(rates[from:])
	slices.Sort(steady)
	return steady[len(steady)/2], len(steady)
}

// ramp is how the whole phase's rate moved over its judged half (see
// diagnose.Ramp); nil when it cannot be split.
func (s series) ramp(cut string) *diagnose.Ramp {
	i := s.half()
	if i < 0 || len(s.t)-i < 5 {
		return nil
	}
	end := len(s.t) - 1
	m := i
	for m < end-1 && s.t[m] < s.t[i]+(s.t[end]-s.t[i])/2 {
		m++
	}
	start := 0
	for start < end && s.delivered[start] == 0 {
		start++
	}
	return &diagnose.Ramp{EarlyBps: s.rate(i, m), LateBps: s.rate(m, end), Retrans: s.retrans, RTT: s.minRTT, Cut: cut,
		Sending: time.Duration((s.t[end] - s.t[start]) * float64(time.Second))}
}
