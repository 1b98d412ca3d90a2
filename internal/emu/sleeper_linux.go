package emu

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper waits for a relative duration with hrtimer precision: a
// non-blocking timerfd parked in Go's netpoller, so no thread is held
// (a locked nanosleep starved the netpoller in the emulator notes).
type sleeper struct {
	f   *os.File
	buf [8]byte
}

func newSleeper() (*sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("emu: timerfd: %w", err)
	}
	return &sleeper{f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// sleep blocks for d, or until close (os.ErrClosed).
func (s *sleeper) sleep(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(int(s.f.Fd()), 0, &spec, nil); err != nil {
		return fmt.Errorf("emu: timerfd settime: %w", err)
	}
	for {
		_, err := s.f.Read(s.buf[:])
		if err == nil || errors.Is(err, os.ErrClosed) {
			return err
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("emu: timerfd read: %w", err)
		}
	}
}

func (s *sleeper) close() error { return s.f.Close() }
