//go:build linux

package exporter

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

// A token, certificate or key file that is not one (a device, a FIFO,
// too short) is bad input, exit 2 as for serve (it exited 1); a file
// that cannot be opened stays an error of the run, as a missing input
// file is for every command.
func TestSecretFilesBadInput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		web  Web
		bad  bool
	}{
		{"token /dev/zero", Web{TokenFile: "/dev/zero"}, true},
		{"token fifo", Web{TokenFile: fifo}, true},
		{"token too short", Web{TokenFile: short}, true},
		{"certificate /dev/zero", Web{CertFile: "/dev/zero", KeyFile: "/dev/zero"}, true},
		{"certificate not PEM", Web{CertFile: good, KeyFile: good}, true},
		{"certificate fifo", Web{CertFile: fifo, KeyFile: good}, true},
		{"token missing", Web{TokenFile: filepath.Join(dir, "absent")}, false},
	} {
		_, err := newServer(NewCollector(NewTracker(Config{MaxSeries: 2000})), nil, tc.web, slog.New(slog.DiscardHandler))
		if err == nil || badinput.Is(err) != tc.bad {
			t.Errorf("%s: %v (bad input %v), want an error, bad input %v", tc.name, err, badinput.Is(err), tc.bad)
		}
	}
}
