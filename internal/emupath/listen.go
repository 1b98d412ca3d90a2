//go:build linux

package emupath

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
)

// WaitListening waits until namespace ns has a TCP socket listening on
// port (any port if 0), or proc exits, or timeout passes. what names the
// program in errors ("nginx", "--server command").
func WaitListening(ctx context.Context, proc *exec.Cmd, ns string, port int, what string, timeout time.Duration) error {
	exited := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		// Only observe: the caller waits for the process.
		for {
			// An exited child stays a zombie until its parent waits, and a
			// zombie still takes signal 0: read its state instead.
			if err := proc.Process.Signal(syscall.Signal(0)); err != nil || isZombie(proc.Process.Pid) {
				close(exited)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		n := 0
		err := netns.Do(ns, func() error {
			var err error
			n, err = countListening(port)
			return err
		})
		if err != nil {
			return fmt.Errorf("watch namespace %s: %w", ns, err)
		}
		if n > 0 {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before listening on a TCP port", what)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if port > 0 {
		return fmt.Errorf("%s is not listening on TCP port %d after %v", what, port, timeout)
	}
	return fmt.Errorf("%s is not listening on a TCP port after %v", what, timeout)
}

// countListening counts TCP sockets in LISTEN state on port (0: any) in
// the calling thread's network namespace (/proc/thread-self/net/tcp).
func countListening(port int) (int, error) {
	n := 0
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/thread-self/net/" + name)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		c, err := parseListening(f, port)
		f.Close()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// isZombie reports whether pid is a zombie (exited, not yet waited for).
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}
