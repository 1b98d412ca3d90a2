// Package cpuuse measures the CPU of this process from the scheduler's
// own accounting: the time its threads ran and the time they waited,
// runnable, for a CPU (the run delay: a host too busy to run them, or a
// CPU limit's throttling: a cgroup's cpu.max or CFS quota keeps a
// throttled thread runnable and waiting). Both are what tell a CPU-bound
// end from an idle one: a process held to 0.2 of a core by its cgroup
// runs 0.2 s a second and waits the rest.
//
// Linux reads /proc/self/task/*/schedstat (CONFIG_SCHED_INFO, on in the
// distributions' kernels); elsewhere, and where it is missing, Now
// reports ok false.
package cpuuse

import "time"

// Use is the CPU a process's threads used and waited for so far.
type Use struct {
	Run, Wait time.Duration
}

// Sub is what was used between an earlier reading and u.
func (u Use) Sub(earlier Use) Use {
	return Use{Run: max(u.Run-earlier.Run, 0), Wait: max(u.Wait-earlier.Wait, 0)}
}
