//go:build linux

package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the cgroup file systems are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// cpuPeriodUS is the CFS period a CPU limit is expressed in.
const cpuPeriodUS = 100_000

// cpuHierarchy finds the cgroup hierarchy that has the cpu controller:
// the unified one (cgroup v2) when the root delegates cpu to its
// children, else the v1 cpu hierarchy. v2 reports true.
func cpuHierarchy() (dir string, v2 bool, err error) {
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control")); err == nil {
		if slices.Contains(strings.Fields(string(b)), "cpu") {
			return cgroupRoot, true, nil
		}
		return "", false, fmt.Errorf("the cpu controller is not enabled for child cgroups of %s (its cgroup.subtree_control lacks cpu): enable it with 'echo +cpu > %s/cgroup.subtree_control'", cgroupRoot, cgroupRoot)
	}
	v1 := filepath.Join(cgroupRoot, "cpu")
	if _, err := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); err == nil {
		return v1, false, nil
	}
	return "", false, fmt.Errorf("no cgroup cpu controller under %s (neither cgroup v2 with cpu nor v1's cpu hierarchy): a CPU limit needs one", cgroupRoot)
}

// makeCPUGroup creates the cgroup name limited to cores CPUs (0.5 is half
// a core) and returns its cgroup.procs open for writing: a process joins
// by writing its PID there. It is opened here because a command in the
// namespace sees no cgroup file system (ip netns exec remounts /sys).
func makeCPUGroup(name string, cores float64) (procs *os.File, err error) {
	dir, v2, err := cpuHierarchy()
	if err != nil {
		return nil, err
	}
	g := filepath.Join(dir, name)
	if err := os.Mkdir(g, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", g, err)
	}
	quota := max(int64(cores*cpuPeriodUS), 1000)
	if v2 {
		err = os.WriteFile(filepath.Join(g, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, cpuPeriodUS)), 0)
	} else {
		err = os.WriteFile(filepath.Join(g, "cpu.cfs_period_us"), []byte(strconv.Itoa(cpuPeriodUS)), 0)
		if err == nil {
			err = os.WriteFile(filepath.Join(g, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0)
		}
	}
	if err == nil {
		procs, err = os.OpenFile(filepath.Join(g, "cgroup.procs"), os.O_WRONLY, 0)
	}
	if err != nil {
		_ = os.Remove(g)
		return nil, fmt.Errorf("limit cgroup %s to %g CPUs: %w", g, cores, err)
	}
	return procs, nil
}

// removeCPUGroup removes the cgroup named name, if any, once the
// processes in it have exited (a killed process leaves it within
// moments); it waits at most a second.
func removeCPUGroup(name string) error {
	dir, _, err := cpuHierarchy()
	if err != nil {
		return nil // no hierarchy: nothing was created
	}
	g := filepath.Join(dir, name)
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := os.Remove(g)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", g, err)
		}
	}
}
