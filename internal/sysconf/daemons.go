package sysconf

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// commLen is the longest comm the kernel keeps (TASK_COMM_LEN - 1); longer
// names, such as systemd-networkd, are truncated to it.
const commLen = 15

// Process is a running process that matched one of the names searched for.
type Process struct {
	PID  int    `json:"PID"`
	Name string `json:"Name"` // the name searched for that matched, not the raw comm
}

// TuningDaemons returns the names of daemons that rewrite sysctls at run
// time, overriding the configuration files.
func TuningDaemons() []string { return []string{"tuned", "bpftune"} }

// NetworkDaemons returns the names of daemons that own interfaces and routes,
// and so decide whether per-route settings persist.
func NetworkDaemons() []string { return []string{"NetworkManager", "systemd-networkd"} }

// FindDaemons scans procRoot ("/proc" on a real host) for processes whose
// comm, or the basename of whose first argv element, is one of names. comm
// truncation to 15 bytes is taken into account. Non-numeric entries are
// skipped, and so are processes that exit during the scan or that may not be
// inspected (hidepid). The result is sorted by PID.
func FindDaemons(procRoot string, names []string) ([]Process, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("sysconf: read %s: %w", procRoot, bare(err))
	}
	var out []Process
	for _, e := range entries {
		pid, ok := parsePID(e.Name())
		if !ok {
			continue
		}
		name, err := matchProcess(filepath.Join(procRoot, e.Name()), names)
		if err != nil {
			if gone(err) {
				continue
			}
			return nil, fmt.Errorf("sysconf: inspect process %d: %w", pid, err)
		}
		if name != "" {
			out = append(out, Process{PID: pid, Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// parsePID accepts the all-digit names of /proc/PID directories.
func parsePID(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// matchProcess returns the entry of names that the process in dir runs, or
// "" if none.
func matchProcess(dir string, names []string) (string, error) {
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return "", err
	}
	if name := matchComm(strings.TrimSuffix(string(comm), "\n"), names); name != "" {
		return name, nil
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "", err
	}
	argv0 := argv0Base(cmdline)
	for _, n := range names {
		if argv0 == n {
			return n, nil
		}
	}
	return "", nil
}

// matchComm matches a comm against names, allowing for truncation.
func matchComm(comm string, names []string) string {
	if comm == "" {
		return ""
	}
	for _, n := range names {
		if comm == n || (len(comm) == commLen && len(n) > commLen && n[:commLen] == comm) {
			return n
		}
	}
	return ""
}

// argv0Base returns the basename of the first NUL-separated element of a
// /proc/PID/cmdline. A process that rewrote its title into a single
// space-separated string ("/usr/sbin/foo --bar") is cut at the first space.
func argv0Base(cmdline []byte) string {
	first, rest, hasNUL := bytes.Cut(cmdline, []byte{0})
	if !hasNUL || len(bytes.Trim(rest, "\x00")) == 0 {
		if i := bytes.IndexByte(first, ' '); i >= 0 {
			first = first[:i]
		}
	}
	if len(first) == 0 {
		return "" // kernel threads and zombies have an empty cmdline
	}
	return filepath.Base(string(first))
}

// gone reports whether a process vanished or may not be inspected.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, syscall.ESRCH) ||
		errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, fs.ErrPermission)
}
