package filekind

import (
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeNamedPipe | 0o600:          "a FIFO",
		fs.ModeSocket | 0o600:             "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a device",
		fs.ModeDevice | 0o600:             "a device",
		0o644:                             "a regular file",
		fs.ModeIrregular | 0o644:          "not a regular file",
	} {
		if got := Of(m); got != want {
			t.Errorf("%v: %q, want %q", m, got, want)
		}
	}
}
