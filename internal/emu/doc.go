// Package emu is the emulator's data plane: it moves frames between the
// client's and the server's TUN devices through one linkemu.Link per
// direction.
//
// # Timers
//
// The writer of each direction sleeps until the next frame is due on a
// timerfd parked in Go's netpoller. Measured on the 2-core lab VM with
// Go 1.26 (40 sleeps each): for 2.5 ms, 49.5 ms and 100 ms sleeps a
// timerfd woke 126, 167 and 60 µs late on average; Go timers 656, 687 and
// 258 µs, because an idle runtime waits in epoll with millisecond
// resolution. Spinning out the last stretch would fix Go timers when idle
// but costs a core under load.
//
// Under load a sleeper on the netpoller wakes late: the thread that polls
// competes with the endpoints for the CPUs, so at 200 ms without a rate
// limit (iperf3 at ~7 Gbit/s on 2 cores) frames left 0.6-0.8 ms late at
// the median and 9% of them over 5 ms late, ACKs too. Each writer
// therefore runs on a locked thread with SCHED_FIFO priority 10 (reset on
// fork: nothing it starts inherits it) and sleeps in clock_nanosleep,
// slices of at most 20 ms: the median fell to 0.04-0.09 ms and the ACK
// direction to a few late frames in 10^5. A thread asleep in a system
// call keeps its P until sysmon takes it, so GOMAXPROCS is raised by two
// (the lesson-4 starvation came from a locked thread holding one of only
// two Ps). Without CAP_SYS_NICE the writer falls back to the timerfd.
// What is left at that rate is the replay itself: a burst the sender
// wrote at tens of Gbit/s is due all at once and is written back to back,
// so frames behind it are late by the burst's length.
package emu
