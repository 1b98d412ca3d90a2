//go:build !unix

package iperf3

import "time"

// cpuTimes is zero where getrusage does not exist: the CPU use we report
// to the server is informational only.
type cpuTimes struct{ user, sys time.Duration }

func processCPU() cpuTimes { return cpuTimes{} }
