//go:build linux || darwin

package apply

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting: errLocked when
// another process holds it. The kernel releases it when f is closed or
// the process dies.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

// noFollow makes an open fail on a symbolic link (ELOOP).
const noFollow = syscall.O_NOFOLLOW

// isLoop reports the error of an O_NOFOLLOW open of a symbolic link.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
