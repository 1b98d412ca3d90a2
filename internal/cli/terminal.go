//go:build linux && !longhaul_portable

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal says whether f is a terminal: progress is then one line
// rewritten in place instead of a line every few seconds, and emulate
// hands the terminal to its command.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
