//go:build !unix

package connlimit

import "math"

// FDBudget is unlimited where the process has no descriptor limit to
// read.
func FDBudget() int { return math.MaxInt32 }
