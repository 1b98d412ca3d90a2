//go:build linux

package netns

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// threadResult is the outcome of onLockedThread.
type threadResult struct {
	// enterErr: the thread could not be switched in; body did not run and
	// the thread is unchanged.
	enterErr error
	// bodyErr is body's error.
	bodyErr error
	// restoreErr: the thread could not be switched back to its original
	// network namespace and has been discarded (its goroutine exited while
	// locked, so the runtime terminated it).
	restoreErr error
}

type threadOutcome struct {
	res      threadResult
	normal   bool // body returned (or was not run)
	panicked bool
	panicVal any
}

// onLockedThread runs enter and then body on a fresh goroutine locked to
// its OS thread, and finally moves the thread back into the network
// namespace it started in. The thread is returned to the runtime only if
// that succeeds. The caller's goroutine and thread are never touched.
//
// enter must either switch the thread's network namespace or fail without
// changing it (unshare and setns are atomic). A panic in body is re-raised
// in the caller's goroutine with the same value; runtime.Goexit in body
// makes the caller's goroutine exit as well.
func onLockedThread(enter, body func() error) threadResult {
	done := make(chan threadOutcome, 1)
	go func() {
		var out threadOutcome
		defer func() { done <- out }()

		runtime.LockOSThread()
		orig, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()),
			unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			out.res.enterErr = classify("open current namespace", err)
			out.normal = true
			runtime.UnlockOSThread()
			return
		}
		defer unix.Close(orig)

		if err := enter(); err != nil {
			out.res.enterErr = err
			out.normal = true
			runtime.UnlockOSThread()
			return
		}

		defer func() {
			if !out.normal {
				// Either a panic or runtime.Goexit; recover tells which.
				if r := recover(); r != nil {
					out.panicked, out.panicVal = true, r
				}
			}
			if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
				// Stay locked: when this goroutine exits the runtime
				// terminates the thread instead of reusing it in the wrong
				// namespace.
				out.res.restoreErr = fmt.Errorf("restore original namespace: %w", classify("setns", err))
				return
			}
			runtime.UnlockOSThread()
		}()

		out.res.bodyErr = body()
		out.normal = true
	}()

	out := <-done
	switch {
	case out.panicked:
		panic(out.panicVal)
	case !out.normal:
		runtime.Goexit()
	}
	return out.res
}
