//go:build unix

package iperf3

import (
	"syscall"
	"time"
)

// cpuTimes is this process's user and system CPU time: the results
// document carries the client's CPU use, which iperf3 servers print.
type cpuTimes struct{ user, sys time.Duration }

func processCPU() cpuTimes {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpuTimes{}
	}
	return cpuTimes{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}
}
