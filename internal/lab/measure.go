package lab

import (
	"time"

	"github.com/longhaul/longhaul/internal/results"
)

// bulkMetrics adds the sender's steady-state throughput and the
// tcp_info time shares to metrics.
func bulkMetrics(metrics map[string]float64, samples []results.Sample, sender string) {
	if bps, ok := SteadyRate(samples, sender); ok {
		metrics["throughput_bps"] = bps
	}
	var busy, rwnd, sndbuf, retrans float64
	last := map[string]results.Sample{}
	for _, x := range samples {
		if x.End == sender {
			last[x.Sock] = x
		}
	}
	for _, x := range last {
		busy += x.BusyS
		rwnd += x.RwndLimitedS
		sndbuf += x.SndbufLimS
		retrans += float64(x.Retrans)
	}
	if busy > 0 {
		metrics["rwnd_limited_share"] = rwnd / busy
		metrics["sndbuf_limited_share"] = sndbuf / busy
	}
	metrics["retrans_segs"] = retrans
}

// SteadyRate is the sum over the sender's sockets of each socket's
// delivery rate over the second half of its life in the samples: slow
// start is over by then on the paths the lab runs, so this is the rate a
// long transfer keeps. Delivered bytes (SACKed included) are used where
// the kernel reports them: bytes_acked stalls behind a hole during loss
// recovery and then jumps, which inflates or deflates a half-run window.
func SteadyRate(samples []results.Sample, sender string) (float64, bool) {
	bySock := map[string][]results.Sample{}
	var order []string
	for _, x := range samples {
		if x.End != sender {
			continue
		}
		if _, ok := bySock[x.Sock]; !ok {
			order = append(order, x.Sock)
		}
		bySock[x.Sock] = append(bySock[x.Sock], x)
	}
	total, ok := 0.0, false
	for _, k := range order {
		ss := bySock[k]
		count := func(x results.Sample) int64 {
			if ss[len(ss)-1].Delivered > 0 {
				return x.Delivered
			}
			return x.BytesAcked
		}
		// The active part: up to the last sample whose counter moved.
		end := len(ss) - 1
		for end > 0 && count(ss[end]) == count(ss[end-1]) {
			end--
		}
		if end < 2 {
			continue
		}
		mid := ss[0].T + (ss[end].T-ss[0].T)/2
		i := 0
		for i < end && ss[i].T < mid {
			i++
		}
		dt := ss[end].T - ss[i].T
		if dt <= 0 {
			continue
		}
		total += float64(count(ss[end])-count(ss[i])) * 8 / dt
		ok = true
	}
	return total, ok
}

// advertisedWindow is the median of the peer's advertised window (snd_wnd)
// seen by end while it had data in flight.
func advertisedWindow(samples []results.Sample, end string) (float64, bool) {
	var w []float64
	for _, x := range samples {
		if x.End == end && x.State == "ESTABLISHED" && x.InFlight > 0 && x.SndWnd > 0 {
			w = append(w, float64(x.SndWnd))
		}
	}
	if len(w) == 0 {
		return 0, false
	}
	return results.Median(w), true
}

// eta blends the scenario's estimate with the measured pace: early on
// the estimate dominates, later the measurement.
func eta(done, total int, elapsed, estimate time.Duration) time.Duration {
	if done >= total {
		return 0
	}
	left := float64(total-done) / float64(total)
	byEstimate := time.Duration(float64(estimate) * left)
	if done == 0 {
		return byEstimate
	}
	byPace := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	w := float64(done) / float64(total)
	return time.Duration(w*float64(byPace) + (1-w)*float64(byEstimate))
}
