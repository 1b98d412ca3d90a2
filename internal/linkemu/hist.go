package linkemu

import (
	"math/bits"
	"time"
)

// latencyHist is a fixed-size log-linear histogram of lateness in whole
// microseconds (rounded up). Values below 1024 µs have their own bucket
// (exact to the microsecond); above, each power-of-two range is split into
// 512 buckets, so a reported percentile is at most 1/512 (0.2%) above the
// true value. Values from 2^24 µs (~16.8 s) up share the last bucket; the
// exact maximum is tracked separately and reported for that bucket. Memory is fixed: 64 KiB.
type latencyHist struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histSubBits  = 10 // 1024 exact buckets, then 512 per octave
	histLinear   = 1 << histSubBits
	histHalf     = histLinear / 2
	histMaxBits  = 24 // values up to 2^24-1 µs
	histMaxValue = 1<<histMaxBits - 1
	histBuckets  = histLinear + (histMaxBits-histSubBits)*histHalf
)

// histIndex maps a value in µs to its bucket.
func histIndex(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	if us > histMaxValue {
		us = histMaxValue
	}
	e := bits.Len64(us) - 1 // histSubBits <= e < histMaxBits
	shift := e - (histSubBits - 1)
	return histLinear + (e-histSubBits)*histHalf + int(us>>shift) - histHalf
}

// histUpper is the largest value in µs that maps to bucket i.
func histUpper(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	k := i - histLinear
	e := histSubBits + k/histHalf
	shift := e - (histSubBits - 1)
	lo := uint64(k%histHalf+histHalf) << shift
	return lo + 1<<shift - 1
}

func (h *latencyHist) add(late time.Duration) {
	if late < 0 {
		late = 0
	}
	us := uint64((late + time.Microsecond - 1) / time.Microsecond)
	h.counts[histIndex(us)]++
	h.n++
	h.max = max(h.max, late)
}

// quantile returns the value at quantile q in (0,1]: the upper bound of the
// bucket holding the ceil(q*n)-th smallest value, capped at the maximum.
func (h *latencyHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) {
		rank++
	}
	rank = max(rank, 1)
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i]
		if cum >= rank {
			if i == histBuckets-1 {
				return h.max // the overflow bucket has no upper bound
			}
			return min(time.Duration(histUpper(i))*time.Microsecond, h.max)
		}
	}
	return h.max
}
