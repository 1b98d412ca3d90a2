//go:build !linux && !darwin

package apply

import "os"

// tryLock has no flock to take here: the journal directory cannot be
// locked, so nothing is applied or rolled back.
func tryLock(f *os.File) error { return ErrNotSupported }

// noFollow: the lock is never taken here (tryLock), nothing to add.
const noFollow = 0

func isLoop(error) bool { return false }
