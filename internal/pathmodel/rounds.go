package pathmodel

import "math"

// SlowStartRounds returns the round trips slow start takes to grow the
// congestion window from initCwnd segments of mss bytes to window bytes,
// doubling per round trip (RFC 5681; Linux grows cwnd by one segment per
// segment acknowledged). It is what a connection pays again after
// tcp_slow_start_after_idle restarts it from the initial window (RFC
// 2861), and 0 when the initial window already covers window.
func SlowStartRounds(window float64, initCwnd, mss int) int {
	if initCwnd <= 0 {
		initCwnd = DefaultInitCwnd
	}
	if mss <= 0 {
		mss = DefaultMSS
	}
	start := float64(initCwnd * mss)
	if window <= start || math.IsNaN(window) {
		return 0
	}
	return int(math.Ceil(math.Log2(min(window, MaxWindow) / start)))
}
