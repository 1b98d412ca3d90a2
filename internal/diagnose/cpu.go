package diagnose

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/units"
)

// CPUEvidence is one end's process over a phase: the seconds its threads
// ran and waited, runnable, for a CPU.
type CPUEvidence struct {
	Host    string // how to name it ("the server")
	Role    string // ActorSender or ActorReceiver
	RunS    float64
	WaitS   float64
	Seconds float64 // the phase's length
	Bps     float64 // what the flow carried
}

// An end is CPU-bound when its threads waited for a CPU cpuWaitShare of
// the phase or more, summed over its threads (a CPU limit throttles a
// process by keeping it waiting; a host too busy does the same: a
// process held to 0.01 of a core at 1 Gbit/s waited 1.67 s a second, one
// running free at 100 Mbit/s 0.003), or ran cpuRunCores of a core.
const (
	cpuWaitShare = 0.5
	cpuRunCores  = 0.9
)

// CPUBound: a process that ran runS and waited waitS seconds for a CPU
// over seconds was held by its CPU.
func CPUBound(runS, waitS, seconds float64) bool {
	return seconds > 0 && (waitS/seconds >= cpuWaitShare || runS/seconds >= cpuRunCores)
}

// CPUCause names a CPU-bound end (CPUBound) of a flow: the sender could
// not write faster, or the receiver read faster. Numbers["receiver"] is
// 1 when the end is the receiver.
func CPUCause(e CPUEvidence) (Cause, bool) {
	if !CPUBound(e.RunS, e.WaitS, e.Seconds) {
		return Cause{}, false
	}
	cores, wait := e.RunS/e.Seconds, e.WaitS/e.Seconds
	host := orWord(e.Host, "the "+e.Role)
	verb, recv := "write", 0.0
	if e.Role == ActorReceiver {
		verb, recv = "read", 1
	}
	c := Cause{Name: CauseCPUBound, Numbers: map[string]float64{"run_cores": cores, "wait_share": wait, "throughput_bps": e.Bps, "receiver": recv},
		Text: fmt.Sprintf("a CPU-bound %s: %s's process ran %.2f of a core and its threads waited for a CPU %.0f%% of the phase: "+
			"a CPU limit (a cgroup's cpu.max, a container's CPU quota) or a host too busy to run it; the flow (%s) goes no faster than %s can %s",
			e.Role, host, cores, 100*wait, units.FormatRate(e.Bps), host, verb)}
	c.Fix = append(c.Fix, fmt.Sprintf("%s: give %s's process more CPU: raise its cgroup's cpu.max (the container's CPU limit), or move other work off the host", e.Role, host))
	return c, true
}
