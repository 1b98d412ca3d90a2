//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"strings"
	"testing"
)

// --cross at or above --rate is refused before anything is set up, as a
// one-line usage error (it used to run with every packet dropped and end
// 10 s late). --check with a command is the other usage error emulate
// finds next, so nothing here ever builds a path.
func TestEmulateCrossAboveRate(t *testing.T) {
	for _, args := range [][]string{
		{"--cross", "150Mbit/s"},
		{"--cross", "100Mbit/s"},
		{"--down-cross", "120Mbit/s"},
		{"--cross", "60Mbit/s", "--up-rate-schedule", "50Mbit/s@2s"},
	} {
		all := append([]string{"emulate", "--rtt", "10ms", "--rate", "100Mbit/s"}, args...)
		_, _, err := run(t, append(all, "--check", "--", "true")...)
		var stderr bytes.Buffer
		code := ExitCode(err, &stderr)
		msg := stderr.String()
		if code != exitUsage || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "cross traffic") || !strings.Contains(msg, "below the link's rate") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line saying the cross traffic must be below the rate", args, code, msg)
		}
	}
}
