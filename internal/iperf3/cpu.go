package iperf3

import "time"

// cpuPercent is CPU use over elapsed in percent, as iperf3 reports it.
func cpuPercent(a, b cpuTimes, elapsed time.Duration) CPU {
	if elapsed <= 0 {
		return CPU{}
	}
	u := 100 * float64(b.user-a.user) / float64(elapsed)
	s := 100 * float64(b.sys-a.sys) / float64(elapsed)
	return CPU{Total: u + s, User: u, System: s}
}
