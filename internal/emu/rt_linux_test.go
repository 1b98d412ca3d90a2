package emu

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// policyOf reads the scheduling policy of a process from /proc (field 41
// of stat: 0 normal, 1 SCHED_FIFO).
func policyOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	p, err := strconv.Atoi(f[41-3])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A boosted writer thread is SCHED_FIFO, and what it starts is not.
func TestBoostThreadResetsOnFork(t *testing.T) {
	skip := make(chan string, 1)
	go func() {
		defer close(skip)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if !boostThread() {
			skip <- "SCHED_FIFO refused (needs CAP_SYS_NICE)"
			return
		}
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Error(err)
			return
		}
		if attr.Policy != unix.SCHED_FIFO || attr.Priority != rtPriority {
			t.Errorf("thread policy %d priority %d, want SCHED_FIFO %d", attr.Policy, attr.Priority, rtPriority)
		}
		cmd := exec.Command("sleep", "5")
		if err := cmd.Start(); err != nil {
			skip <- "no sleep binary: " + err.Error()
			return
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		if p := policyOf(t, cmd.Process.Pid); p != unix.SCHED_NORMAL {
			t.Errorf("child started from the real-time thread has policy %d, want normal (reset on fork)", p)
		}
	}()
	if why := <-skip; why != "" {
		t.Skip(why)
	}
}
