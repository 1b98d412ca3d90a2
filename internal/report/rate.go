package report

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/longhaul/longhaul/internal/results"
)

// maxGridPoints bounds the points of a rate series.
const maxGridPoints = 20000

// rateSeries is what a sender delivered over time, summed over its
// sockets. Each socket is sampled at its own instant, so its delivered
// bytes are interpolated onto one time grid (the sample interval) before
// they are summed; and the rate at a grid point is averaged over the
// window before it, at least one round trip long: a flow's ACKs come in
// one burst per round trip, so a 100 ms difference of a 117 Mbit/s flow
// at 200 ms reads 0 or 230 Mbit/s, and a window of whole sample
// intervals (300 ms at 209 ms) holds one burst or two. The window is the
// sender's median smoothed RTT (at least one sample interval). It returns
// the grid points, the rates (bit/s) and the window in seconds.
func rateSeries(samples []results.Sample, sender string) ([]float64, []*float64, float64) {
	bySock := map[string][]results.Sample{}
	var rtts, gaps []float64
	for _, s := range samples {
		if s.End != sender {
			continue
		}
		bySock[s.Sock] = append(bySock[s.Sock], s)
		if s.RTT > 0 {
			rtts = append(rtts, s.RTT)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, ss := range bySock {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].T < ss[j].T })
		for i, s := range ss {
			lo, hi = min(lo, s.T), max(hi, s.T)
			if i > 0 {
				gaps = append(gaps, s.T-ss[i-1].T)
			}
		}
	}
	step := median(gaps)
	if step <= 0 || hi <= lo || math.IsInf(hi-lo, 0) {
		return nil, nil, 0
	}
	// A document is data from elsewhere: one sample stamped a billion
	// seconds late made a grid of 10^10 points at the sample interval
	// (found by FuzzLoad). The grid is the sample interval up to
	// maxGridPoints points, coarser beyond: a chart shows no more.
	step = max(step, (hi-lo)/maxGridPoints)
	w := max(step, median(rtts))
	keys := slices.Sorted(maps.Keys(bySock)) // one order: sums are reproducible
	var xs []float64
	var ys []*float64
	for t := lo + w; t <= hi+1e-9; t += step {
		var moved float64
		for _, k := range keys {
			ss := bySock[k]
			moved += deliveredAt(ss, t) - deliveredAt(ss, t-w)
		}
		xs = append(xs, round6(t))
		ys = append(ys, num(moved*8/w, true))
	}
	return xs, ys, w
}

// delivered is a sample's delivered bytes (acknowledged or SACKed), or
// its acknowledged bytes where the kernel reports no delivered count.
func delivered(s results.Sample) float64 {
	return float64(max(s.Delivered, s.BytesAcked))
}

// deliveredAt interpolates a socket's delivered bytes at t: before its
// first sample and after its last it holds those samples' values.
func deliveredAt(ss []results.Sample, t float64) float64 {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].T >= t })
	switch {
	case i == 0:
		return delivered(ss[0])
	case i == len(ss):
		return delivered(ss[len(ss)-1])
	}
	a, b := ss[i-1], ss[i]
	if b.T == a.T {
		return delivered(b)
	}
	f := (t - a.T) / (b.T - a.T)
	return delivered(a) + f*(delivered(b)-delivered(a))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
