package emu

import (
	"time"

	"golang.org/x/sys/unix"
)

// rtPriority is the SCHED_FIFO priority of the writers' threads: the
// lowest band above every normal task, below the kernel's own
// real-time threads (50 and up).
const rtPriority = 10

// boostThread moves the calling, locked thread to SCHED_FIFO (reset on
// fork: a process or thread it creates starts as a normal task). It
// returns false when the kernel refuses (no CAP_SYS_NICE); the thread is
// then left as it was.
func boostThread() bool {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: rtPriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	return unix.SchedSetAttr(0, &attr, 0) == nil
}

// nanosleep blocks the calling thread for d (hrtimer precision; the
// thread keeps its P while asleep, which is why the emulator runs with
// spare Ps).
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}
