package lab

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// cpuTimes are the aggregate "cpu" line of /proc/stat, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

// parseProcStat reads the aggregate line of /proc/stat: busy is
// everything but idle and iowait (softirq and steal included: a
// receiving stack steered to another CPU is work the run caused).
func parseProcStat(r io.Reader) (cpuTimes, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[0] != "cpu" {
			continue
		}
		var t cpuTimes
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return t, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			if i > 7 { // guest and guest_nice are already in user and nice
				break
			}
			t.total += v
			if i != 3 && i != 4 { // idle, iowait
				t.busy += v
			}
		}
		return t, nil
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, err
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat has no aggregate cpu line")
}

// busyCores is how many CPUs were busy on average between a and b.
func busyCores(a, b cpuTimes, cpus int) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total) * float64(cpus)
}
