//go:build !linux

package emu

import (
	"os"
	"time"
)

// sleeper falls back to Go timers off Linux.
type sleeper struct{ done chan struct{} }

func newSleeper() (*sleeper, error) { return &sleeper{done: make(chan struct{})}, nil }

func (s *sleeper) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.done:
		return os.ErrClosed
	}
}

func (s *sleeper) close() error { close(s.done); return nil }
