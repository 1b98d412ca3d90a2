//go:build linux

package cpuuse

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procTasks is where the threads' schedstat files are.
var procTasks = "/proc/self/task"

// Now sums the run and wait time of the process's threads. Threads that
// exited since an earlier reading take their time with them, so a delta
// can undercount; the Go runtime keeps its threads.
func Now() (Use, bool) {
	dirs, err := os.ReadDir(procTasks)
	if err != nil {
		return Use{}, false
	}
	var u Use
	read := false
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(procTasks, d.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		run, wait, ok := parse(string(b))
		if !ok {
			continue
		}
		u.Run += run
		u.Wait += wait
		read = true
	}
	return u, read
}

// parse reads "RUN_NS WAIT_NS TIMESLICES".
func parse(s string) (run, wait time.Duration, ok bool) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || r < 0 || w < 0 {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
}
