//go:build unix

package connlimit

import (
	"math"

	"golang.org/x/sys/unix"
)

// FDBudget is the process's descriptor limit (RLIMIT_NOFILE, soft), the
// budget FitFDs fits a limiter into.
func FDBudget() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(r.Cur)
}
