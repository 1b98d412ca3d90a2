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
package emu
