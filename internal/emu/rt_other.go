//go:build !linux

package emu

import "time"

// rtPriority is unused off Linux: the writers keep the timer sleeper.
const rtPriority = 0

func boostThread() bool { return false }

func nanosleep(d time.Duration) { time.Sleep(d) }
