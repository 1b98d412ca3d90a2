//go:build linux

package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

// reap removes the leftovers of runs with this prefix whose owning
// process is gone: for each such run it SIGKILLs, by PID, every process
// whose network namespace is one of the run's (found through
// /proc/PID/ns/net), deletes the namespaces and removes the state file.
// A run is dead if its state file names a process that no longer exists,
// is a zombie, or has another start time (PID reuse) or boot id; a run
// whose namespaces have no state file at all is an orphan and is reaped
// too (Up writes the state file before creating anything). Runs owned by
// a live process, including the caller, are left alone; so is anything
// not named exactly "<prefix>-<10 hex digits>-c|s".
//
// Owners are identified by PID, so reap must run in the same PID
// namespace as the processes that called Up.
//
// It returns the namespace names and state file paths it removed, sorted.
func reap(prefix string) ([]string, error) {
	runs, removed, err := findRuns(prefix)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		r := runs[id]
		if r.statePath != "" {
			st, err := readState(r.statePath)
			if err == nil && ownerAlive(st) {
				continue
			}
			// Missing (the owner closed it meanwhile) or unreadable: no
			// live owner can be shown, reap.
		}
		gone, err := r.remove()
		removed = append(removed, gone...)
		errs = append(errs, err...)
	}
	slices.Sort(removed)
	return removed, joinErrors(errs)
}

// leftover is one run's namespaces and state file as found on the host.
type leftover struct {
	ns        []string
	statePath string
}

// findRuns groups the namespaces and state files of runs with this
// prefix by run id. On the way it removes temporary state files older
// than a minute and returns their paths.
func findRuns(prefix string) (map[string]*leftover, []string, error) {
	rn := namesFor(prefix)
	runs := map[string]*leftover{}
	get := func(id string) *leftover {
		if runs[id] == nil {
			runs[id] = &leftover{}
		}
		return runs[id]
	}

	// Namespaces first, state files second: Up writes the state file
	// before it creates a namespace, so a namespace seen here always has
	// its (live owner's) state file visible in the listing below.
	names, err := netns.List(prefix + "-")
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		if m := rn.ns.FindStringSubmatch(n); m != nil {
			get(m[1]).ns = append(get(m[1]).ns, n)
		}
	}
	entries, err := os.ReadDir(StateDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("list %s: %w", StateDir, err)
	}
	var removed []string
	for _, e := range entries {
		if m := rn.state.FindStringSubmatch(e.Name()); m != nil {
			get(m[1]).statePath = filepath.Join(StateDir, e.Name())
			continue
		}
		// A temporary file lives for microseconds in a live Up; an old
		// one was left by a process killed while writing it.
		if strings.HasPrefix(e.Name(), prefix+"-") && strings.HasSuffix(e.Name(), ".json.tmp") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
				p := filepath.Join(StateDir, e.Name())
				if err := os.Remove(p); err == nil {
					removed = append(removed, p)
				}
			}
		}
	}
	return runs, removed, nil
}

// remove kills what runs in the run's namespaces, deletes them and then,
// if every one is gone, the state file. It returns what it removed.
func (r *leftover) remove() (removed []string, errs []error) {
	ok := true
	for _, name := range r.ns {
		if _, err := killInNamespace(name); err != nil {
			errs = append(errs, err)
		}
		if err := removeCPUGroup(name); err != nil {
			errs = append(errs, err)
		}
		if err := netns.Delete(name); err != nil {
			errs = append(errs, err)
			ok = false
			continue
		}
		removed = append(removed, name)
	}
	if ok && r.statePath != "" {
		err := os.Remove(r.statePath)
		switch {
		case err == nil:
			removed = append(removed, r.statePath)
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("remove state file: %w", err))
		}
	}
	return removed, errs
}

// writeState records the calling process as the owner of a run and
// returns the file's path. The file is written under a temporary name
// and renamed, so that Reap never sees a half-written state of a live
// run.
func writeState(prefix, runID string, names []string) (string, error) {
	self, err := readProcStat(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("state file: %w", err)
	}
	st := state{
		Version:    stateVersion,
		Prefix:     prefix,
		RunID:      runID,
		Namespaces: names,
		PID:        os.Getpid(),
		StartTime:  self.StartTime,
		BootID:     bootID(),
		Created:    time.Now().UTC(),
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return "", fmt.Errorf("state file: %w", err)
	}
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return "", fmt.Errorf("state file: %w", err)
	}
	path := filepath.Join(StateDir, prefix+"-"+runID+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("state file: %w", err)
	}
	return path, nil
}

func readState(path string) (state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("%s: %w", path, err)
	}
	if st.PID <= 0 {
		return state{}, fmt.Errorf("%s: no owner pid", path)
	}
	return st, nil
}

// ownerAlive reports whether the process recorded in st still runs. When
// in doubt (an unexpected error reading /proc) it says yes: a leftover is
// better than killing a live run.
func ownerAlive(st state) bool {
	if b := bootID(); st.BootID != "" && b != "" && b != st.BootID {
		return false
	}
	ps, err := readProcStat(st.PID)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	return !ps.dead() && ps.StartTime == st.StartTime
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// killInNamespace SIGKILLs, by PID, every process (other than this one)
// whose network namespace is the named one, and waits up to two seconds
// for them to exit. Only a process's main thread is looked at
// (/proc/PID/ns/net). A namespace that does not exist has no processes.
func killInNamespace(name string) ([]int, error) {
	var ns unix.Stat_t
	if err := unix.Stat(netns.Path(name), &ns); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, fmt.Errorf("kill processes in %s: stat: %w", name, err)
	}
	pids, err := pidsInNetns(ns.Dev, ns.Ino)
	if err != nil {
		return nil, fmt.Errorf("kill processes in %s: %w", name, err)
	}
	var killed []int
	for _, pid := range pids {
		if err := unix.Kill(pid, unix.SIGKILL); err == nil {
			killed = append(killed, pid)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range killed {
		for {
			ps, err := readProcStat(pid)
			if err != nil || ps.dead() {
				break
			}
			if time.Now().After(deadline) {
				return killed, fmt.Errorf("kill processes in %s: pid %d still running after SIGKILL", name, pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return killed, nil
}

// pidsInNetns lists the processes whose /proc/PID/ns/net is the nsfs
// inode (dev, ino), excluding this process.
func pidsInNetns(dev, ino uint64) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue // exited, or a kernel thread we may not look at
		}
		if st.Dev == dev && st.Ino == ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
